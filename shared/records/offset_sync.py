"""OffsetSync records of the `mm2-offset-syncs.<alias>.internal` topic, byte-compatible with MM2.

Strait's writer adds one record header, `SYNC_SEGMENT_HEADER`, that MM2 ignores: the writer's id and how many
offset jumps (a skipped or repeated offset on either side) that writer had seen when it decided the sync. Two
syncs of one writer with the same count have nothing but one-to-one copies between them, even when syncs
between them were lost in delivery or left out; that is what makes a run of syncs provably gap-free.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from shared.errors import CodecError
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


SYNC_SEGMENT_HEADER = "strait.sync.segment"
_OPENS = b"\x01"


@dataclass(frozen=True, slots=True)
class SyncSegment:
    """Which stretch of one-to-one copying a sync belongs to: `writer` is random per partition and task life,
    `jumps` the number of offset jumps that writer had seen when it decided the sync. `opens`: the sync is the
    one at the jump itself (the first record after it), not compared (every sync of a stretch is in it)."""

    writer: int
    jumps: int
    opens: bool = field(default=False, compare=False)

    def encode(self) -> bytes:
        """16 bytes: writer INT64, jumps INT64; a sync that opens its stretch adds one byte, 1 (16-byte readers
        take such a sync for one without a segment, which costs them precision, never data)."""
        flag = _OPENS if self.opens else b""
        return encode_int64(self.writer, "writer") + encode_int64(self.jumps, "jumps") + flag

    @classmethod
    def decode(cls, value: bytes) -> SyncSegment:
        """Decode the header value; raises CodecError on truncated or trailing bytes."""
        reader = Reader(value, "OffsetSync segment header")
        writer = reader.read_int64("writer")
        jumps = reader.read_int64("jumps")
        opens = len(value) == 17 and value[16:] == _OPENS
        if opens:
            return cls(writer, jumps, opens=True)
        reader.finish()
        return cls(writer, jumps)

    @classmethod
    def from_headers(cls, headers: Sequence[tuple[str, bytes | None]]) -> SyncSegment | None:
        """The segment a record's headers carry; None when absent (MM2's syncs) or not decodable."""
        for name, value in headers:
            if name == SYNC_SEGMENT_HEADER and value is not None:
                try:
                    return cls.decode(value)
                except CodecError:
                    return None
        return None
