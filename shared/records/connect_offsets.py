"""MirrorMaker 2's copy positions as Kafka Connect stores them (its offsets topic), byte for byte.

MM2's MirrorSourceConnector tasks commit, per source partition, the last upstream offset they copied. Connect
writes it to its offsets topic (dedicated mode: `mm2-offsets.<source>.internal` on the target cluster) as JSON
without schemas: key `["MirrorSourceConnector",{"cluster":"A","partition":0,"topic":"orders"}]`, value
`{"offset":41}`; a null value forgets the position. On restart a task seeks to offset + 1 (no stored position:
`auto.offset.reset`). Connect keeps the newest value per key bytes, and the producer spreads keys over the
topic's partitions with Kafka's default (murmur2) partitioner, so a position written for MM2 must use the same
key bytes and land on the same partition as MM2's own writes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from shared.errors import CodecError

SOURCE_CONNECTOR = "MirrorSourceConnector"


@dataclass(frozen=True, slots=True)
class SourcePartitionKey:
    """Which connector, source cluster and source partition a stored position is about."""

    connector: str
    cluster: str
    topic: str
    partition: int

    def encode(self) -> bytes:
        """The exact key bytes Connect writes (map keys in Connect's order: cluster, partition, topic)."""
        source = {"cluster": self.cluster, "partition": self.partition, "topic": self.topic}
        return json.dumps([self.connector, source], separators=(",", ":"), ensure_ascii=False).encode()

    @classmethod
    def decode(cls, raw: bytes) -> SourcePartitionKey:
        """Parse a key; CodecError if it is not `[connector, {cluster, partition, topic}]`."""
        try:
            connector, source = json.loads(raw)
            cluster, topic, partition = source["cluster"], source["topic"], source["partition"]
        except (ValueError, TypeError, KeyError, RecursionError) as exc:
            raise CodecError(f"not a MirrorSourceConnector offsets key: {raw[:120]!r}") from exc
        if not (isinstance(connector, str) and isinstance(cluster, str) and isinstance(topic, str)):
            raise CodecError(f"offsets key has wrong types: {raw[:120]!r}")
        if not isinstance(partition, int) or isinstance(partition, bool) or partition < 0:
            raise CodecError(f"offsets key has a bad partition: {raw[:120]!r}")
        return cls(connector, cluster, topic, partition)


def encode_last_copied(offset: int) -> bytes:
    """The value: the last upstream offset copied (the next record to copy is offset + 1)."""
    return json.dumps({"offset": offset}, separators=(",", ":")).encode()


def decode_last_copied(raw: bytes) -> int:
    """The last upstream offset copied; CodecError if the value is not `{"offset": N}` with N >= -1."""
    try:
        offset = json.loads(raw)["offset"]
    except (ValueError, TypeError, KeyError, RecursionError) as exc:
        raise CodecError(f"not a MirrorSourceConnector offsets value: {raw[:120]!r}") from exc
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < -1:
        raise CodecError(f"offsets value has a bad offset: {raw[:120]!r}")
    return offset
