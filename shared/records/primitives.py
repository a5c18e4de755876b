"""Kafka protocol primitives used by MM2's internal records: big-endian integers and INT16-length strings."""

from __future__ import annotations

import struct

from shared.errors import CodecError

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")

# Kafka's STRING type stores its byte length in a signed INT16, so this is the longest encodable string.
MAX_STRING_BYTES = 0x7FFF


def _pack(codec: struct.Struct, type_name: str, value: int, field: str) -> bytes:
    try:
        return codec.pack(value)
    except struct.error as exc:
        raise CodecError(f"{field}: {value!r} does not fit in {type_name}") from exc


def encode_int16(value: int, field: str = "value") -> bytes:
    """Encode a signed 16-bit big-endian integer; `field` names it in the error if it does not fit."""
    return _pack(_INT16, "INT16", value, field)


def encode_int32(value: int, field: str = "value") -> bytes:
    """Encode a signed 32-bit big-endian integer; `field` names it in the error if it does not fit."""
    return _pack(_INT32, "INT32", value, field)


def encode_int64(value: int, field: str = "value") -> bytes:
    """Encode a signed 64-bit big-endian integer; `field` names it in the error if it does not fit."""
    return _pack(_INT64, "INT64", value, field)


def encode_string(value: str, field: str = "value") -> bytes:
    """Encode a Kafka STRING: INT16 byte length, then the UTF-8 bytes (never null)."""
    try:
        data = value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise CodecError(f"{field}: string is not encodable as UTF-8 ({exc.reason})") from exc
    if len(data) > MAX_STRING_BYTES:
        raise CodecError(f"{field}: string of {len(data)} bytes exceeds the STRING maximum of {MAX_STRING_BYTES}")
    return _INT16.pack(len(data)) + data


class Reader:
    """Reads primitives from one byte string in order; every read names its field in errors.

    `what` names the whole structure (for example "OffsetSync key") so that a message reads
    "OffsetSync key: field 'partition' needs 4 bytes at offset 8, only 2 left".
    Call `finish()` after the last field: trailing bytes are an error too.
    """

    def __init__(self, data: bytes, what: str) -> None:
        self._data = memoryview(data)
        self._pos = 0
        self._what = what

    def _take(self, size: int, field: str) -> memoryview:
        left = len(self._data) - self._pos
        if size > left:
            raise CodecError(
                f"{self._what}: field '{field}' needs {size} bytes at offset {self._pos}, only {left} left"
            )
        chunk = self._data[self._pos : self._pos + size]
        self._pos += size
        return chunk

    def read_int16(self, field: str) -> int:
        """Read a signed 16-bit big-endian integer."""
        value: int = _INT16.unpack(self._take(2, field))[0]
        return value

    def read_int32(self, field: str) -> int:
        """Read a signed 32-bit big-endian integer."""
        value: int = _INT32.unpack(self._take(4, field))[0]
        return value

    def read_int64(self, field: str) -> int:
        """Read a signed 64-bit big-endian integer."""
        value: int = _INT64.unpack(self._take(8, field))[0]
        return value

    def read_string(self, field: str) -> str:
        """Read a Kafka STRING; a negative length (null) is rejected, as Kafka's STRING type does."""
        length = self.read_int16(field)
        if length < 0:
            raise CodecError(f"{self._what}: field '{field}' has negative string length {length}")
        raw = self._take(length, field)
        try:
            return str(raw, "utf-8")
        except UnicodeDecodeError as exc:
            raise CodecError(f"{self._what}: field '{field}' is not valid UTF-8 ({exc.reason})") from exc

    def finish(self) -> None:
        """Check that every byte was consumed."""
        left = len(self._data) - self._pos
        if left:
            raise CodecError(f"{self._what}: {left} unexpected trailing bytes after offset {self._pos}")
