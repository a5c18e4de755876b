"""Read `.properties` text with java.util.Properties semantics, so MM2 files parse exactly as Kafka reads them.

Syntax: `#` or `!` starts a comment line; a key ends at the first unescaped `=`, `:` or whitespace;
whitespace around the separator is skipped; a line ending in an odd number of backslashes continues
on the next line (whose leading whitespace is dropped); escapes are `\\t \\n \\r \\f \\uXXXX`, and a
backslash before any other character stands for that character; the last duplicate key wins.

One difference, on purpose: trailing whitespace of a value is trimmed (Java keeps it, and Kafka's
ConfigDef trims most typed values later anyway); whitespace written as an escape (`\\ `) is kept.

Limits Java does not have, against hostile files: a file is at most MAX_FILE_BYTES and holds no NUL
byte (binary data, or a UTF-16 file, is refused instead of read as nonsense keys), and a logical line
is at most MAX_LINE_CHARS characters.

Writing (`property_line`, `comment_line`) escapes as Java's Properties.store does, so whatever a key or value
holds (line breaks, separators, `#`) it reads back, here and in Java, as exactly that one key and value.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

from shared.errors import ConfigError

_WHITESPACE = " \t\f"
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_SIMPLE_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_ESCAPE_LETTERS = {char: letter for letter, char in _SIMPLE_ESCAPES.items()}
MAX_FILE_BYTES = 16 * 1024 * 1024
MAX_LINE_CHARS = 1024 * 1024


def parse_properties(text: str, *, source: str = "<string>") -> dict[str, str]:
    """Parse properties `text` into an ordered dict; `source` names the text in error messages."""
    return {key: value for _, key, value in _entries(text, source)}


def duplicate_keys(text: str, *, source: str = "<string>") -> dict[str, list[int]]:
    """Keys set more than once, with the line of each setting (the last one wins, as in Java and MM2)."""
    lines: dict[str, list[int]] = {}
    for line_number, key, _ in _entries(text, source):
        lines.setdefault(key, []).append(line_number)
    return {key: numbers for key, numbers in lines.items() if len(numbers) > 1}


def _entries(text: str, source: str) -> Iterator[tuple[int, str, str]]:
    """(line number, key, value) of every setting, in file order."""
    for line_number, logical in _logical_lines(text):
        where = f"{source}:{line_number}"
        if len(logical) > MAX_LINE_CHARS:
            raise _too_long(where, logical)
        key_end, value_start = _split_key(logical)
        key, _ = _unescape(logical[:key_end], f"{where}: malformed \\uXXXX escape in a key")
        value, protected = _unescape(
            logical[value_start:], f"{where}: malformed \\uXXXX escape in the value of {key!r}"
        )
        trimmed = value.rstrip(_WHITESPACE)
        yield line_number, key, value[: max(len(trimmed), protected)]


def property_line(key: str, value: str) -> str:
    """One `key = value` line that reads back as exactly `key` and `value` (and holds only printable ASCII)."""
    return f"{_escape(key, in_key=True)} = {_escape(value, in_key=False)}"


def comment_line(text: str) -> str:
    """`# text`, one comment line whatever `text` holds (see `printable`)."""
    return "# " + printable(text)


def printable(text: str) -> str:
    """`text` with each character but printable ASCII written as `\\uXXXX`: no line break, no terminal control."""
    return "".join(char if " " <= char < "\x7f" else _unicode_escape(char) for char in text)


def _escape(text: str, *, in_key: bool) -> str:
    """Java's Properties.saveConvert, with \\uXXXX for non-ASCII (as `store(OutputStream)` writes).

    A key also escapes every space and `= : # !`. A value escapes its first space and, since this reader trims a
    value's trailing whitespace, its last; `= : # !` in a value are left as written (Java escapes them too, but
    only the key of a line can end at one or start a comment, and the key always comes first).
    """
    out: list[str] = []
    last = len(text) - 1
    for position, char in enumerate(text):
        if char == "\\":
            out.append("\\\\")
        elif char == " ":
            out.append("\\ " if in_key or position in (0, last) else " ")
        elif char in _ESCAPE_LETTERS:
            out.append("\\" + _ESCAPE_LETTERS[char])
        elif char in "=:#!" and in_key:
            out.append("\\" + char)
        elif " " < char < "\x7f":
            out.append(char)
        else:
            out.append(_unicode_escape(char))
    return "".join(out)


def _unicode_escape(char: str) -> str:
    """`\\uXXXX` for each UTF-16 unit of `char` (a character outside the BMP is a surrogate pair, as in Java)."""
    units = char.encode("utf-16-be", "surrogatepass")
    return "".join(f"\\u{units[i] << 8 | units[i + 1]:04X}" for i in range(0, len(units), 2))


def load_properties_file(path: str | os.PathLike[str]) -> dict[str, str]:
    """Read and parse a properties file; a missing or unreadable file is a ConfigError naming the path.

    The file is decoded as UTF-8, falling back to ISO-8859-1 (what Java's Properties.load reads) when
    it is not valid UTF-8.
    """
    name = os.fspath(path)
    return parse_properties(read_properties_text(name), source=name)


def read_properties_text(name: str) -> str:
    """The file's text, as `load_properties_file` reads it (bounded, no binary data, UTF-8 else ISO-8859-1)."""
    try:
        with open(name, "rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)  # bounded: the path may be /dev/zero or a huge file
    except OSError as exc:
        reason = exc.strerror or exc.__class__.__name__
        raise ConfigError(f"cannot read properties file {name}: {reason}", value=name) from exc
    if len(raw) > MAX_FILE_BYTES:
        raise ConfigError(f"properties file {name} is larger than {MAX_FILE_BYTES} bytes", value=name)
    nul = raw.find(b"\x00")
    if nul >= 0:
        raise ConfigError(
            f"properties file {name} holds binary data (a NUL byte at byte {nul}); expected UTF-8 or ISO-8859-1 text",
            value=name,
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("iso-8859-1")
    return text.removeprefix("\ufeff")


def _too_long(where: str, line: str) -> ConfigError:
    """A line over MAX_LINE_CHARS, named by its key (the value, which may be a secret, is not shown)."""
    key_end, _ = _split_key(line[:1000])
    key = line[: min(key_end, 200)]
    return ConfigError(
        f"{where}: the line of key {key!r} is {len(line)} characters long; at most {MAX_LINE_CHARS} are allowed",
        key=key,
    )


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """Join continued natural lines; skip blank and comment lines. Yields (first line number, text)."""
    natural = _LINE_BREAK.split(text)
    logical: list[tuple[int, str]] = []
    index = 0
    while index < len(natural):
        start = index
        line = natural[index].lstrip(_WHITESPACE)
        index += 1
        if not line or line[0] in "#!":
            continue
        parts: list[str] = []
        while _continues(line):
            parts.append(line[:-1])
            if index >= len(natural):
                line = ""
                break
            # A continuation line is never a comment, and its leading whitespace is dropped.
            line = natural[index].lstrip(_WHITESPACE)
            index += 1
        parts.append(line)
        logical.append((start + 1, "".join(parts)))
    return logical


def _continues(line: str) -> bool:
    """True when `line` ends in an odd number of backslashes."""
    count = len(line) - len(line.rstrip("\\"))
    return count % 2 == 1


def _split_key(line: str) -> tuple[int, int]:
    """Return (end of the raw key, start of the raw value) in `line`."""
    key_end = len(line)
    value_start = len(line)
    has_separator = False
    escaped = False
    for position, char in enumerate(line):
        if not escaped and char in "=:":
            key_end, value_start, has_separator = position, position + 1, True
            break
        if not escaped and char in _WHITESPACE:
            key_end, value_start = position, position + 1
            break
        escaped = char == "\\" and not escaped
    while value_start < len(line):
        char = line[value_start]
        if char not in _WHITESPACE:
            if has_separator or char not in "=:":
                break
            has_separator = True
        value_start += 1
    return key_end, value_start


def _unescape(raw: str, malformed: str) -> tuple[str, int]:
    """Apply escapes; also return the output length up to the last escaped character (kept when trimming).

    `malformed` is the message for a bad \\u escape; it must not quote the text, which may be a secret.
    """
    out: list[str] = []
    protected = 0
    position = 0
    while position < len(raw):
        char = raw[position]
        position += 1
        if char != "\\" or position >= len(raw):
            out.append(char)
            continue
        char = raw[position]
        position += 1
        if char == "u":
            digits = raw[position : position + 4]
            if len(digits) != 4 or any(c not in "0123456789abcdefABCDEF" for c in digits):
                raise ConfigError(malformed)
            out.append(chr(int(digits, 16)))
            position += 4
        else:
            out.append(_SIMPLE_ESCAPES.get(char, char))
        protected = len(out)
    text = "".join(out)
    if any("\ud800" <= c <= "\udfff" for c in text):
        # Java strings are UTF-16: a pair of \\u escapes can spell one character outside the BMP.
        combined = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
        return combined, protected - (len(text) - len(combined))
    return text, protected
