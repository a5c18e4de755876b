"""v2 records read and written with their header keys as bytes.

Kafka allows any bytes as a header key, and producers other than Java's write keys that are not UTF-8; aiokafka's
record codec decodes and encodes them as str and fails on such a key. A batch it cannot read is read here instead,
and records holding a bytes key are written here, so the key reaches the target as it was.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Sequence
from typing import Any

from aiokafka.codec import (
    gzip_decode,
    gzip_encode,
    lz4_decode,
    lz4_encode,
    snappy_decode,
    snappy_encode,
    zstd_decode,
    zstd_encode,
)
from aiokafka.record.util import decode_varint, encode_varint
from crc32c import crc32c

Header = tuple[str | bytes, bytes | None]
Decoded = tuple[int, int, bytes | None, bytes | None, list[Header]]  # offset, timestamp, key, value, headers

_HEAD = struct.Struct(">qiibIhiqqqhii")
_HEAD_BYTES = _HEAD.size
_LOG_APPEND_TIME = 0x08
_DECODE: dict[int, Any] = {1: gzip_decode, 2: snappy_decode, 3: lz4_decode, 4: zstd_decode}
_ENCODE: dict[int, Any] = {1: gzip_encode, 2: snappy_encode, 3: lz4_encode, 4: zstd_encode}


def read_records(raw: bytes) -> list[Decoded]:
    """The records of one whole v2 batch, decompressed; every header key as bytes."""
    fields = _HEAD.unpack_from(raw)
    base_offset, attributes, first_ts, max_ts, count = fields[0], fields[5], fields[7], fields[8], fields[12]
    codec = attributes & 0x07
    body = bytes(raw[_HEAD_BYTES:]) if codec == 0 else bytes(_DECODE[codec](bytes(raw[_HEAD_BYTES:])))
    records: list[Decoded] = []
    pos = 0
    for _ in range(count):
        length, pos = decode_varint(body, pos)
        end = pos + length
        pos += 1  # the record's attributes (unused)
        ts_delta, pos = decode_varint(body, pos)
        offset_delta, pos = decode_varint(body, pos)
        key, pos = _read_bytes(body, pos)
        value, pos = _read_bytes(body, pos)
        header_count, pos = decode_varint(body, pos)
        headers: list[Header] = []
        for _ in range(header_count):
            header_key, pos = _read_bytes(body, pos)
            header_value, pos = _read_bytes(body, pos)
            headers.append((header_key or b"", header_value))
        timestamp = max_ts if attributes & _LOG_APPEND_TIME else first_ts + ts_delta
        records.append((base_offset + offset_delta, timestamp, key, value, headers))
        pos = end
    return records


def write_batch(
    records: Sequence[tuple[int | None, bytes | None, bytes | None, Sequence[Header]]], codec: int
) -> bytearray:
    """A v2 batch at base offset 0, no producer, of (timestamp, key, value, headers); str keys go as UTF-8."""
    now = int(time.time() * 1000)
    stamps = [now if record[0] is None else record[0] for record in records]
    first_ts = stamps[0] if stamps else now
    body = bytearray()
    for index, ((_, key, value, headers), stamp) in enumerate(zip(records, stamps, strict=True)):
        record = bytearray(b"\x00")
        encode_varint(stamp - first_ts, record.append)
        encode_varint(index, record.append)
        _write_bytes(record, key)
        _write_bytes(record, value)
        encode_varint(len(headers), record.append)
        for header_key, header_value in headers:
            _write_bytes(record, header_key.encode() if isinstance(header_key, str) else header_key)
            _write_bytes(record, header_value)
        encode_varint(len(record), body.append)
        body += record
    attributes = 0
    if codec:
        compressed = _ENCODE[codec](bytes(body))
        if len(compressed) < len(body):
            body, attributes = bytearray(compressed), codec
    out = bytearray(_HEAD_BYTES) + body
    max_ts = max(stamps, default=now)
    count = len(records)
    _HEAD.pack_into(out, 0, 0, len(out) - 12, -1, 2, 0, attributes, count - 1, first_ts, max_ts, -1, -1, -1, count)
    struct.pack_into(">I", out, 17, crc32c(memoryview(out)[21:]))
    return out


def _read_bytes(buffer: bytes, pos: int) -> tuple[bytes | None, int]:
    length, pos = decode_varint(buffer, pos)
    if length < 0:
        return None, pos
    return buffer[pos : pos + length], pos + length


def _write_bytes(out: bytearray, data: bytes | None) -> None:
    if data is None:
        encode_varint(-1, out.append)
        return
    encode_varint(len(data), out.append)
    out += data
