"""Exact record sizes on the wire: what the target broker compares with a topic's max.message.bytes."""

from __future__ import annotations

from collections.abc import Sequence

RECORD_BATCH_OVERHEAD = 61  # v2 batch header, with the log's offset and length fields

# Most an uncompressed single-record v2 batch adds to its key and value bytes without headers: batch header,
# a 5-byte varint for the record length, attributes and deltas, two 5-byte length varints, header count.
_MAX_FRAMING = RECORD_BATCH_OVERHEAD + 5 + 3 + 5 + 5 + 1


def surely_fits(
    key: bytes | None, value: bytes | None, headers: Sequence[tuple[str, bytes | None]] | None, limit: int
) -> bool:
    """True when the record cannot exceed `limit` whatever its exact framing: skips the exact count per record."""
    if headers:
        return False
    return _MAX_FRAMING + (len(key) if key else 0) + (len(value) if value else 0) <= limit


def record_size(key: bytes | None, value: bytes | None, headers: Sequence[tuple[str, bytes | None]] | None) -> int:
    """Bytes of an uncompressed v2 batch holding only this record: what the broker compares with max.message.bytes.

    Exact, so a record of exactly the target's limit is copied; with compression the batch may be smaller still.
    """
    body = 3  # attributes, timestamp delta 0 and offset delta 0: one byte each
    body += field_size(key) + field_size(value) + varint_size(len(headers or ()))
    for name, data in headers or ():
        body += field_size(name.encode()) + field_size(data)
    return RECORD_BATCH_OVERHEAD + varint_size(body) + body


def field_size(data: bytes | None) -> int:
    """A length-prefixed field; null is written as length -1, one byte."""
    return 1 if data is None else varint_size(len(data)) + len(data)


def varint_size(length: int) -> int:
    """Bytes of the zig-zag varint of a non-negative `length`."""
    zigzag, size = length << 1, 1
    while zigzag >= 0x80:
        zigzag >>= 7
        size += 1
    return size
