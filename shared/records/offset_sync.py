"""OffsetSync records of the `mm2-offset-syncs.<alias>.internal` topic, byte-compatible with MM2."""

from __future__ import annotations

from dataclasses import dataclass

from shared.records.primitives import Reader, encode_int32, encode_int64, encode_string


@dataclass(frozen=True, slots=True)
class OffsetSync:
    """One upstream-to-downstream offset pair for a *source* topic-partition.

    Key: topic STRING, partition INT32. Value: upstreamOffset INT64, offset INT64 (no version header).
    """

    topic: str
    partition: int
    upstream_offset: int
    downstream_offset: int

    def record_key(self) -> bytes:
        """Encode the record key exactly as MM2 does."""
        return encode_string(self.topic, "topic") + encode_int32(self.partition, "partition")

    def record_value(self) -> bytes:
        """Encode the record value exactly as MM2 does (16 bytes)."""
        return encode_int64(self.upstream_offset, "upstreamOffset") + encode_int64(self.downstream_offset, "offset")

    @classmethod
    def decode(cls, key: bytes, value: bytes) -> OffsetSync:
        """Decode a record's key and value; raises CodecError on truncated or trailing bytes."""
        key_reader = Reader(key, "OffsetSync key")
        topic = key_reader.read_string("topic")
        partition = key_reader.read_int32("partition")
        key_reader.finish()
        value_reader = Reader(value, "OffsetSync value")
        upstream = value_reader.read_int64("upstreamOffset")
        downstream = value_reader.read_int64("offset")
        value_reader.finish()
        return cls(topic, partition, upstream, downstream)
