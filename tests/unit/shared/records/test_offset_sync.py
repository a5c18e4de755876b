"""OffsetSync codec: MM2's byte example, serde vectors and malformed input."""

from __future__ import annotations

import pytest

from shared.errors import CodecError
from shared.records import OffsetSync


def test_reference_bytes() -> None:
    sync = OffsetSync("topic1", 2, 100, 200)
    assert sync.record_key() == bytes.fromhex("00 06 74 6f 70 69 63 31 00 00 00 02")
    assert sync.record_value() == bytes.fromhex("00 00 00 00 00 00 00 64 00 00 00 00 00 00 00 c8")
    assert len(sync.record_value()) == 16
    assert OffsetSync.decode(sync.record_key(), sync.record_value()) == sync


@pytest.mark.parametrize(
    "sync",
    [
        OffsetSync("topic-1", 2, 3, 4),
        OffsetSync("A.orders", 0, 0, 0),
        OffsetSync("주문", 17, 1 << 40, (1 << 63) - 1),
        OffsetSync("t", (1 << 31) - 1, -1, -(1 << 63)),
        OffsetSync("", 0, 5, 5),
    ],
)
def test_round_trip(sync: OffsetSync) -> None:
    assert OffsetSync.decode(sync.record_key(), sync.record_value()) == sync


def test_truncated_key() -> None:
    with pytest.raises(CodecError, match="OffsetSync key: field 'partition'"):
        OffsetSync.decode(bytes.fromhex("0006746f7069633100"), bytes(16))


def test_truncated_value() -> None:
    key = OffsetSync("t", 0, 0, 0).record_key()
    with pytest.raises(CodecError, match="OffsetSync value: field 'offset' needs 8 bytes at offset 8, only 7 left"):
        OffsetSync.decode(key, bytes(15))


def test_trailing_bytes() -> None:
    sync = OffsetSync("t", 0, 1, 2)
    with pytest.raises(CodecError, match="OffsetSync value: 1 unexpected trailing bytes"):
        OffsetSync.decode(sync.record_key(), sync.record_value() + b"\x00")
    with pytest.raises(CodecError, match="OffsetSync key: 2 unexpected trailing bytes"):
        OffsetSync.decode(sync.record_key() + b"xx", sync.record_value())


def test_garbage() -> None:
    with pytest.raises(CodecError):
        OffsetSync.decode(b"\xff\xfe garbage", b"nope")


def test_partition_out_of_range() -> None:
    with pytest.raises(CodecError, match="partition"):
        OffsetSync("t", 1 << 31, 0, 0).record_key()
