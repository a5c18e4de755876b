"""Checkpoint codec: MM2's serde vector, exact bytes, versions and malformed input."""

from __future__ import annotations

import pytest

from shared.errors import CodecError
from shared.records import CHECKPOINT_VERSION, Checkpoint


def test_mm2_serde_vector() -> None:
    checkpoint = Checkpoint("group-1", "topic-2", 3, 4, 5, "metadata-6")
    assert Checkpoint.decode(checkpoint.record_key(), checkpoint.record_value()) == checkpoint


def test_exact_bytes() -> None:
    checkpoint = Checkpoint("g", "A.orders", 1, 100, 200, "m")
    assert checkpoint.record_key() == (
        bytes.fromhex("0001") + b"g" + bytes.fromhex("0008") + b"A.orders" + bytes.fromhex("00000001")
    )
    assert checkpoint.record_value() == (
        bytes.fromhex("0000")  # version 0
        + bytes.fromhex("0000000000000064")
        + bytes.fromhex("00000000000000c8")
        + bytes.fromhex("0001")
        + b"m"
    )
    assert CHECKPOINT_VERSION == 0


@pytest.mark.parametrize(
    "checkpoint",
    [
        Checkpoint("group", "A.orders", 0, 0, 0, ""),
        Checkpoint("グループ", "B.A.注文", 12, 1 << 50, 1 << 49, "métadonnées"),
        Checkpoint("", "", 0, 0, 0, ""),
        Checkpoint("g", "t", (1 << 31) - 1, (1 << 63) - 1, (1 << 63) - 1, "x" * 1000),
    ],
)
def test_round_trip(checkpoint: Checkpoint) -> None:
    assert Checkpoint.decode(checkpoint.record_key(), checkpoint.record_value()) == checkpoint


@pytest.mark.parametrize(
    ("partition", "upstream", "downstream", "field"),
    [(-1, 1, 2, "partition"), (0, -1, 2, "upstreamOffset"), (0, 1, -1, "offset"), (0, 1, -(1 << 63), "offset")],
)
def test_a_negative_partition_or_offset_is_refused(partition: int, upstream: int, downstream: int, field: str) -> None:
    # MM2 never writes one (it drops negative translations, and its reader's OffsetAndMetadata refuses them), so
    # such a record is hostile or corrupt: served, it would send a failing-over group to an offset that cannot be.
    checkpoint = Checkpoint("g", "A.orders", partition, upstream, downstream)
    with pytest.raises(CodecError, match=f"Checkpoint: negative {field} -"):
        Checkpoint.decode(checkpoint.record_key(), checkpoint.record_value())


def test_metadata_defaults_to_empty() -> None:
    assert Checkpoint("g", "t", 0, 1, 2).metadata == ""


def test_unknown_version_is_rejected() -> None:
    checkpoint = Checkpoint("g", "t", 0, 1, 2, "")
    value = b"\x00\x01" + checkpoint.record_value()[2:]
    with pytest.raises(CodecError, match="unsupported version 1"):
        Checkpoint.decode(checkpoint.record_key(), value)


def test_truncated_metadata() -> None:
    checkpoint = Checkpoint("g", "t", 0, 1, 2, "abc")
    with pytest.raises(CodecError, match="Checkpoint value: field 'metadata'"):
        Checkpoint.decode(checkpoint.record_key(), checkpoint.record_value()[:-1])


def test_truncated_key() -> None:
    checkpoint = Checkpoint("g", "t", 0, 1, 2, "")
    with pytest.raises(CodecError, match="Checkpoint key: field 'partition'"):
        Checkpoint.decode(checkpoint.record_key()[:-1], checkpoint.record_value())


def test_trailing_bytes() -> None:
    checkpoint = Checkpoint("g", "t", 0, 1, 2, "")
    with pytest.raises(CodecError, match="trailing"):
        Checkpoint.decode(checkpoint.record_key(), checkpoint.record_value() + b"\x00")


def test_empty_value() -> None:
    with pytest.raises(CodecError, match="field 'version'"):
        Checkpoint.decode(b"", b"")
