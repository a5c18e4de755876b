"""Checkpoint records of the `<source>.checkpoints.internal` topic, byte-compatible with MM2."""

from __future__ import annotations

from dataclasses import dataclass

from shared.errors import CodecError
from shared.records.primitives import Reader, encode_int16, encode_int32, encode_int64, encode_string

CHECKPOINT_VERSION = 0


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A consumer group's translated offset for one *remote* topic-partition on the target.

    Key: group STRING, topic STRING, partition INT32.
    Value: version INT16 (0), upstreamOffset INT64, offset INT64, metadata STRING.
    A decoded one has no negative partition or offset (`decode` refuses them).
    """

    group: str
    topic: str
    partition: int
    upstream_offset: int
    downstream_offset: int
    metadata: str = ""

    def record_key(self) -> bytes:
        """Encode the record key exactly as MM2 does."""
        return (
            encode_string(self.group, "group")
            + encode_string(self.topic, "topic")
            + encode_int32(self.partition, "partition")
        )

    def record_value(self) -> bytes:
        """Encode the record value (version 0) exactly as MM2 does."""
        return (
            encode_int16(CHECKPOINT_VERSION, "version")
            + encode_int64(self.upstream_offset, "upstreamOffset")
            + encode_int64(self.downstream_offset, "offset")
            + encode_string(self.metadata, "metadata")
        )

    @classmethod
    def decode(cls, key: bytes, value: bytes) -> Checkpoint:
        """Decode a record; raises CodecError on bad bytes, a version other than 0, or a negative partition or offset.

        MM2 only asserts the version (a no-op in production JVMs); Strait refuses to guess a layout. MM2 never writes
        a negative partition or offset (it drops negative translations, and its own reader's OffsetAndMetadata
        refuses a negative offset): such a record is corrupt or hostile, and served it would fail a failover.
        """
        value_reader = Reader(value, "Checkpoint value")
        version = value_reader.read_int16("version")
        if version != CHECKPOINT_VERSION:
            raise CodecError(f"Checkpoint value: unsupported version {version} (only {CHECKPOINT_VERSION})")
        upstream = value_reader.read_int64("upstreamOffset")
        downstream = value_reader.read_int64("offset")
        metadata = value_reader.read_string("metadata")
        value_reader.finish()
        key_reader = Reader(key, "Checkpoint key")
        group = key_reader.read_string("group")
        topic = key_reader.read_string("topic")
        partition = key_reader.read_int32("partition")
        key_reader.finish()
        for name, number in (("partition", partition), ("upstreamOffset", upstream), ("offset", downstream)):
            if number < 0:
                raise CodecError(f"Checkpoint: negative {name} {number}")
        return cls(group, topic, partition, upstream, downstream, metadata)
