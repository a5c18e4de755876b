"""Kafka protocol primitives: widths, byte order, string framing and error messages."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from shared.errors import CodecError
from shared.records.primitives import (
    MAX_STRING_BYTES,
    Reader,
    encode_int16,
    encode_int32,
    encode_int64,
    encode_string,
)


def test_integers_are_big_endian_fixed_width() -> None:
    assert encode_int16(1) == b"\x00\x01"
    assert encode_int16(-1) == b"\xff\xff"
    assert encode_int32(2) == b"\x00\x00\x00\x02"
    assert encode_int64(200) == bytes.fromhex("00000000000000c8")
    assert encode_int64(-1) == b"\xff" * 8


@pytest.mark.parametrize(
    ("encode", "value"),
    [(encode_int16, 1 << 15), (encode_int32, -(1 << 31) - 1), (encode_int64, 1 << 63)],
)
def test_out_of_range_integers(encode: Callable[[int, str], bytes], value: int) -> None:
    with pytest.raises(CodecError, match="does not fit"):
        encode(value, "offset")


def test_string_framing() -> None:
    assert encode_string("topic1") == bytes.fromhex("0006") + b"topic1"
    assert encode_string("") == b"\x00\x00"
    # The length counts UTF-8 bytes, not characters.
    assert encode_string("é") == b"\x00\x02\xc3\xa9"


def test_string_length_limit() -> None:
    assert len(encode_string("x" * MAX_STRING_BYTES)) == MAX_STRING_BYTES + 2
    with pytest.raises(CodecError, match="metadata"):
        encode_string("x" * (MAX_STRING_BYTES + 1), "metadata")


def test_unencodable_string() -> None:
    with pytest.raises(CodecError, match="topic"):
        encode_string("\ud800", "topic")


def test_reader_round_trip() -> None:
    data = encode_int16(-2) + encode_int32(7) + encode_int64(-9) + encode_string("grüße")
    reader = Reader(data, "test")
    assert reader.read_int16("a") == -2
    assert reader.read_int32("b") == 7
    assert reader.read_int64("c") == -9
    assert reader.read_string("d") == "grüße"
    reader.finish()


def test_truncation_names_the_field() -> None:
    reader = Reader(b"\x00\x00\x00", "OffsetSync key")
    with pytest.raises(CodecError, match=r"OffsetSync key: field 'partition' needs 4 bytes at offset 0, only 3 left"):
        reader.read_int32("partition")


def test_truncated_string_body() -> None:
    reader = Reader(b"\x00\x05abc", "key")
    with pytest.raises(CodecError, match="'topic' needs 5 bytes at offset 2, only 3 left"):
        reader.read_string("topic")


def test_negative_string_length() -> None:
    with pytest.raises(CodecError, match="negative string length -1"):
        Reader(b"\xff\xff", "key").read_string("topic")


def test_invalid_utf8() -> None:
    with pytest.raises(CodecError, match="not valid UTF-8"):
        Reader(b"\x00\x02\xc3\x28", "key").read_string("topic")


def test_trailing_bytes() -> None:
    reader = Reader(b"\x00\x01\x00", "value")
    reader.read_int16("version")
    with pytest.raises(CodecError, match="1 unexpected trailing bytes after offset 2"):
        reader.finish()
