"""`__consumer_offsets` records decode as Kafka's own schemas lay them out (OffsetCommitKey/Value, versions 0-4)."""

from __future__ import annotations

import struct

import pytest

from shared.errors import CodecError
from shared.records.consumer_offsets import (
    OffsetCommitKey,
    OffsetCommitValue,
    OtherKey,
    decode_key,
    decode_offset_commit_value,
    group_partition,
)


def string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def commit_key(version: int, group: str, topic: str, partition: int) -> bytes:
    return struct.pack(">h", version) + string(group) + string(topic) + struct.pack(">i", partition)


def test_offset_commit_keys_of_both_versions_name_group_topic_and_partition() -> None:
    for version in (0, 1):
        assert decode_key(commit_key(version, "billing", "orders", 7)) == OffsetCommitKey("billing", "orders", 7)


def test_group_metadata_and_newer_record_types_are_other_keys() -> None:
    assert decode_key(struct.pack(">h", 2) + string("billing")) == OtherKey(2, "billing")
    assert decode_key(struct.pack(">h", 9) + b"\x00\x07whatever") == OtherKey(9)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (struct.pack(">hq", 0, 42) + string("m") + struct.pack(">q", 1700), OffsetCommitValue(42, "m", 1700)),
        (
            struct.pack(">hq", 1, 42) + string("m") + struct.pack(">qq", 1700, 9999),
            OffsetCommitValue(42, "m", 1700, expire_timestamp_ms=9999),
        ),
        (struct.pack(">hq", 2, 42) + string("") + struct.pack(">q", 1700), OffsetCommitValue(42, "", 1700)),
        (
            struct.pack(">hqi", 3, 42, 5) + string("m") + struct.pack(">q", 1700),
            OffsetCommitValue(42, "m", 1700, leader_epoch=5),
        ),
        (  # flexible: compact string (length + 1), then tagged fields: one tag 0 of 16 bytes (a topic id) skipped
            struct.pack(">hqi", 4, 42, 5) + b"\x02m" + struct.pack(">q", 1700) + b"\x01\x00\x10" + bytes(16),
            OffsetCommitValue(42, "m", 1700, leader_epoch=5),
        ),
    ],
)
def test_offset_commit_values_of_every_version(raw: bytes, expected: OffsetCommitValue) -> None:
    assert decode_offset_commit_value(raw) == expected


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (struct.pack(">hq", 5, 42), "value version 5 is newer than 4"),
        (struct.pack(">hq", 3, 42), "truncated"),
        (struct.pack(">hq", 0, 42) + b"\x00\x02\xff\xfe" + struct.pack(">q", 1), "not UTF-8"),
        (struct.pack(">hq", 0, 42) + b"\xff\xff" + struct.pack(">q", 1), "null where a string is required"),
    ],
)
def test_values_no_broker_writes_are_codec_errors_that_say_why(raw: bytes, message: str) -> None:
    with pytest.raises(CodecError, match=message):
        decode_offset_commit_value(raw)


def test_a_truncated_key_is_a_codec_error() -> None:
    with pytest.raises(CodecError, match="truncated"):
        decode_key(commit_key(1, "billing", "orders", 7)[:-2])


def test_groups_map_to_the_partition_the_coordinator_uses() -> None:
    # Java: Math.abs("console-consumer-12345".hashCode()) % 50 == 6; "hello".hashCode() == 99162322.
    assert group_partition("console-consumer-12345") == 6
    assert group_partition("hello", 50) == 99162322 % 50
    assert group_partition("", 50) == 0
    assert all(0 <= group_partition(f"g{i}", 10) < 10 for i in range(1000))
