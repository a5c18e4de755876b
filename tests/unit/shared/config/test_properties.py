"""java.util.Properties syntax: comments, separators, continuations, escapes, duplicates, files."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared.config import load_properties_file, parse_properties
from shared.config.properties import comment_line, property_line
from shared.errors import ConfigError


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a=1", {"a": "1"}),
        ("a:1", {"a": "1"}),
        ("a 1", {"a": "1"}),
        ("a\t1", {"a": "1"}),
        ("a = 1", {"a": "1"}),
        ("  a  :  1", {"a": "1"}),
        ("a =  = 1", {"a": "= 1"}),  # only the first separator is skipped
        ("a  =", {"a": ""}),
        ("lonely", {"lonely": ""}),
        ("a=1=2:3", {"a": "1=2:3"}),
        ("a=x # not a comment", {"a": "x # not a comment"}),
    ],
)
def test_separators_and_whitespace(text: str, expected: dict[str, str]) -> None:
    assert parse_properties(text) == expected


def test_comments_and_blank_lines_are_skipped() -> None:
    text = "# comment\n! also a comment\n   # indented comment\n\n   \n\tkey=value\n"
    assert parse_properties(text) == {"key": "value"}


def test_comment_line_ending_in_backslash_does_not_continue() -> None:
    assert parse_properties("# comment \\\nkey=value") == {"key": "value"}


def test_trailing_whitespace_of_value_is_trimmed_but_escaped_space_kept() -> None:
    assert parse_properties("a = value   \t\nb = value\\ \\ \n") == {"a": "value", "b": "value  "}


def test_line_continuation_drops_leading_whitespace_of_next_line() -> None:
    text = "servers = a:9092, \\\n          b:9092, \\\n    c:9092\nnext=1"
    assert parse_properties(text) == {"servers": "a:9092, b:9092, c:9092", "next": "1"}


def test_continuation_line_starting_with_hash_is_not_a_comment() -> None:
    assert parse_properties("a=1\\\n  #2") == {"a": "1#2"}


def test_even_number_of_backslashes_does_not_continue() -> None:
    assert parse_properties("a=x\\\\\nb=y") == {"a": "x\\", "b": "y"}


def test_backslash_at_end_of_text_is_dropped() -> None:
    assert parse_properties("a=x\\") == {"a": "x"}


def test_continuation_into_blank_line_ends_the_value() -> None:
    assert parse_properties("a=x\\\n\nb=y") == {"a": "x", "b": "y"}


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_all_line_terminators(newline: str) -> None:
    assert parse_properties(f"a=1{newline}b=2{newline}") == {"a": "1", "b": "2"}


def test_escapes_in_values() -> None:
    text = r"a=tab\there\nnew\rret\fform\\back\u00e9\=\:\#\!\q"
    assert parse_properties(text) == {"a": "tab\there\nnew\rret\fform\\back\u00e9=:#!q"}


def test_surrogate_pair_escape_becomes_one_character() -> None:
    assert parse_properties(r"smile=\ud83d\ude00") == {"smile": "\U0001f600"}


def test_escaped_separators_in_keys() -> None:
    text = r"my\=key=1" + "\n" + r"my\:key:2" + "\n" + r"my\ key 3"
    assert parse_properties(text) == {"my=key": "1", "my:key": "2", "my key": "3"}


def test_flow_keys_keep_their_arrow() -> None:
    assert parse_properties("A->B.enabled = true") == {"A->B.enabled": "true"}


def test_last_duplicate_wins() -> None:
    assert parse_properties("a=1\nb=2\na=3") == {"a": "3", "b": "2"}


def test_malformed_unicode_escape_names_source_and_line() -> None:
    with pytest.raises(ConfigError, match=r"^mm2\.properties:3: malformed \\uXXXX escape in the value of 'b'$"):
        parse_properties("a=1\n\nb=\\u12G4", source="mm2.properties")


def test_truncated_unicode_escape_is_an_error() -> None:
    with pytest.raises(ConfigError, match="malformed"):
        parse_properties("a=\\u12")


def test_malformed_unicode_escape_in_key() -> None:
    with pytest.raises(ConfigError, match=r"<string>:1: malformed .* in a key"):
        parse_properties("k\\uZZZZ=1")


def test_load_file_utf8(tmp_path: Path) -> None:
    path = tmp_path / "mm2.properties"
    path.write_text("\ufeffname = caf\u00e9\n", encoding="utf-8")
    assert load_properties_file(path) == {"name": "caf\u00e9"}


def test_load_file_falls_back_to_latin1(tmp_path: Path) -> None:
    path = tmp_path / "mm2.properties"
    path.write_bytes(b"name = caf\xe9\n")
    assert load_properties_file(str(path)) == {"name": "caf\u00e9"}


def test_missing_file_names_the_path(tmp_path: Path) -> None:
    path = tmp_path / "absent.properties"
    with pytest.raises(ConfigError, match=r"cannot read properties file .*absent\.properties: No such file"):
        load_properties_file(path)


def test_directory_is_not_readable_as_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=str(tmp_path)):
        load_properties_file(tmp_path)


HOSTILE = [
    "",
    "plain",
    "a\rb.security.protocol=PLAINTEXT",
    "a\nb = c",
    "a\r\nb",
    "=value",
    ":value",
    "#not a comment",
    "!not a comment",
    "key = value: # !",
    " leading",
    "trailing ",
    "  ",
    "\t\f tabs and feeds \t",
    "ends in a backslash\\",
    "\\\\ two \\n not a newline \\u0041",
    "line\u2028separator\u2029paragraph\x85next line\x0bvertical tab",
    "unicode é ü 中文 😀 \x00 \x1b[31m \x7f",
]


@pytest.mark.parametrize("key", HOSTILE)
@pytest.mark.parametrize("value", HOSTILE)
def test_a_written_line_reads_back_as_exactly_its_key_and_value(key: str, value: str) -> None:
    line = property_line(key, value)
    assert line.isascii(), line
    assert line.isprintable(), line
    assert parse_properties(f"{line}\nnext = 1\n") == {key: value, "next": "1"}


def test_written_lines_are_what_java_properties_store_writes() -> None:
    assert property_line("a b=c:d#e!f\\", "x=y:z#!") == "a\\ b\\=c\\:d\\#e\\!f\\\\ = x=y:z#!"
    assert property_line("k", " a\tb\nc\rd\fe ") == "k = \\ a\\tb\\nc\\rd\\fe\\ "
    assert property_line("k", "é😀\u2028") == "k = \\u00E9\\uD83D\\uDE00\\u2028"


@pytest.mark.parametrize("text", HOSTILE)
def test_a_comment_stays_one_comment(text: str) -> None:
    comment = comment_line(text)
    assert comment.isascii()
    assert comment.isprintable()
    assert parse_properties(f"{comment}\nnext = 1\n") == {"next": "1"}
