"""The record size check: exact at the limit, and the per-record shortcut never lets an oversized record by."""

from __future__ import annotations

import random

import pytest

from services.data_mirror.record_size import record_size, surely_fits


def _batch_bytes(key: bytes | None, value: bytes | None) -> int:
    """Size of a one-record uncompressed v2 batch without headers, written out field by field."""

    def varint(n: int) -> bytes:
        z, out = (n << 1) ^ (n >> 63), bytearray()
        while z >= 0x80:
            out.append((z & 0x7F) | 0x80)
            z >>= 7
        out.append(z)
        return bytes(out)

    def field(data: bytes | None) -> bytes:
        return varint(-1) if data is None else varint(len(data)) + data

    body = b"\x00" + varint(0) + varint(0) + field(key) + field(value) + varint(0)
    return 61 + len(varint(len(body))) + len(body)


@pytest.mark.parametrize("value_len", [0, 1, 63, 64, 127, 128, 8191, 8192, 1_048_576, 16_777_216])
@pytest.mark.parametrize("key", [None, b"", b"k" * 200])
def test_exact_size_matches_the_wire_format(key: bytes | None, value_len: int) -> None:
    value = b"v" * value_len
    assert record_size(key, value, None) == _batch_bytes(key, value)


def test_the_shortcut_only_answers_when_the_record_fits() -> None:
    rng = random.Random(7)
    for _ in range(5000):
        key = None if rng.random() < 0.3 else b"k" * rng.randrange(0, 300)
        value = None if rng.random() < 0.1 else b"v" * rng.randrange(0, 70_000)
        limit = rng.randrange(1, 70_500)
        if surely_fits(key, value, None, limit):
            assert record_size(key, value, None) <= limit
    # Near the limit the shortcut defers to the exact count, so a record of exactly the limit is still copied.
    value = b"v" * 1000
    exact = record_size(None, value, None)
    assert not surely_fits(None, value, None, exact)
    assert not surely_fits(None, value, [("h", b"x")], 10**9)  # headers: always counted exactly
