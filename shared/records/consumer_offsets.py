"""Records of Kafka's `__consumer_offsets` topic: the offset commits of consumer groups, as brokers write them.

Following this topic shows every commit as it happens, without asking each group for its offsets (the way
monitoring tools such as Burrow do). Only offset commits matter here: a key's first two bytes are its type
(0 and 1: an offset commit, keyed by group, topic and partition; 2: group metadata; 3 and up: newer group
protocols, share groups and the like), and every type but the commits is passed over, so records a newer
broker writes never stop a reader. An offset commit's value has versions 0-4 (4 is Kafka's flexible encoding:
compact strings and tagged fields, which are skipped); a null value deletes the group's offset for the
partition. A group's records all go to partition `group_partition(group)`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from shared.errors import CodecError

OFFSET_COMMIT_KEY_TYPES = frozenset({0, 1})
GROUP_METADATA_KEY_TYPE = 2
DEFAULT_PARTITIONS = 50  # offsets.topic.num.partitions


@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    """Whose commit a record is: group, topic and partition."""

    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class OtherKey:
    """A record that is not an offset commit (group metadata, newer protocols): `key_type` says which."""

    key_type: int
    group: str | None = None


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    """A committed offset; `leader_epoch` is -1 when unknown, `expire_timestamp_ms` -1 unless set (version 1)."""

    offset: int
    metadata: str
    commit_timestamp_ms: int
    leader_epoch: int = -1
    expire_timestamp_ms: int = -1


class _Reader:
    """Big-endian reads over one record's bytes; running past the end is a CodecError."""

    def __init__(self, raw: bytes, what: str) -> None:
        self._raw = raw
        self._at = 0
        self._what = what

    def _take(self, size: int) -> bytes:
        if size < 0 or self._at + size > len(self._raw):
            raise CodecError(f"{self._what}: truncated at byte {self._at} of {len(self._raw)}")
        chunk = self._raw[self._at : self._at + size]
        self._at += size
        return chunk

    def int16(self) -> int:
        return int(struct.unpack(">h", self._take(2))[0])

    def int32(self) -> int:
        return int(struct.unpack(">i", self._take(4))[0])

    def int64(self) -> int:
        return int(struct.unpack(">q", self._take(8))[0])

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            byte = self._take(1)[0]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise CodecError(f"{self._what}: varint longer than 5 bytes")

    def string(self) -> str:
        size = self.int16()
        if size < 0:
            raise CodecError(f"{self._what}: null where a string is required")
        return self._decode(self._take(size))

    def compact_string(self) -> str:
        size = self.uvarint() - 1
        if size < 0:
            raise CodecError(f"{self._what}: null where a string is required")
        return self._decode(self._take(size))

    def skip_tagged_fields(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()  # tag
            self._take(self.uvarint())

    def _decode(self, chunk: bytes) -> str:
        try:
            return chunk.decode()
        except UnicodeDecodeError as exc:
            raise CodecError(f"{self._what}: string is not UTF-8") from exc


def decode_key(raw: bytes) -> OffsetCommitKey | OtherKey:
    """The key of a `__consumer_offsets` record; CodecError only for bytes no broker writes."""
    reader = _Reader(raw, "__consumer_offsets key")
    key_type = reader.int16()
    if key_type in OFFSET_COMMIT_KEY_TYPES:
        return OffsetCommitKey(reader.string(), reader.string(), reader.int32())
    if key_type == GROUP_METADATA_KEY_TYPE:
        return OtherKey(key_type, reader.string())
    return OtherKey(key_type)


def decode_offset_commit_value(raw: bytes) -> OffsetCommitValue:
    """An offset commit's value, versions 0-4; CodecError for a newer version or malformed bytes."""
    reader = _Reader(raw, "__consumer_offsets offset commit")
    version = reader.int16()
    if version in (0, 2):
        return OffsetCommitValue(reader.int64(), reader.string(), reader.int64())
    if version == 1:
        offset, metadata, committed = reader.int64(), reader.string(), reader.int64()
        return OffsetCommitValue(offset, metadata, committed, expire_timestamp_ms=reader.int64())
    if version == 3:
        offset, epoch, metadata, committed = reader.int64(), reader.int32(), reader.string(), reader.int64()
        return OffsetCommitValue(offset, metadata, committed, leader_epoch=epoch)
    if version == 4:
        offset, epoch, metadata, committed = reader.int64(), reader.int32(), reader.compact_string(), reader.int64()
        reader.skip_tagged_fields()
        return OffsetCommitValue(offset, metadata, committed, leader_epoch=epoch)
    raise CodecError(f"__consumer_offsets offset commit: value version {version} is newer than 4")


def _java_string_hash(text: str) -> int:
    """Java's String.hashCode (over UTF-16 code units, with int32 overflow)."""
    value = 0
    units = text.encode("utf-16-be")
    for index in range(0, len(units), 2):
        value = (31 * value + int.from_bytes(units[index : index + 2], "big")) & 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def group_partition(group: str, partitions: int = DEFAULT_PARTITIONS) -> int:
    """The `__consumer_offsets` partition holding `group`'s records, as the group coordinator places it."""
    hashed = _java_string_hash(group)
    return 0 if hashed == -(1 << 31) else abs(hashed) % partitions
