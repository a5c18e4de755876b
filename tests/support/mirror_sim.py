"""Plays data-mirror's part in tests until the real one can be swapped in: copies a topic's new records to
its remote topic on the target and writes MM2 offset syncs for them.

Sync rule (MM2's OffsetSyncWriter): a sync for the first record copied, whenever the downstream offset is
offset.lag.max or more past the last sync's downstream + 1, when the upstream offset skipped, when the
downstream offset went back; and, as MM2's periodic commit does with its delayed syncs, one for the last
record of each copy. Keys and values are copied, partition by partition (not timestamps or headers).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from confluent_kafka import KafkaException, TopicPartition

from shared.kafka.factories import confluent_consumer
from shared.kafka.topics import COMPACTED
from shared.records import OffsetSync
from shared.replication_policy import DefaultReplicationPolicy
from tests.support.kafka_io import make_topic, produce


@dataclass
class _SyncState:
    """MM2's per-partition PartitionState."""

    previous_upstream: int = -1
    previous_downstream: int = -1
    last_sync_downstream: int = -1

    def due(self, upstream: int, downstream: int, lag_max: int) -> bool:
        due = (
            self.last_sync_downstream == -1
            or downstream - (self.last_sync_downstream + 1) >= lag_max
            or upstream - self.previous_upstream != 1
            or downstream < self.previous_downstream
        )
        if due:
            self.last_sync_downstream = downstream
        self.previous_upstream, self.previous_downstream = upstream, downstream
        return due


class MirrorSimulation:
    """Mirror of flow `source_alias -> target_alias` between the clusters reached by `source` and `target`."""

    def __init__(
        self,
        source: Mapping[str, str],
        target: Mapping[str, str],
        *,
        source_alias: str,
        target_alias: str,
        offset_lag_max: int = 100,
        offset_syncs_location: str = "source",
    ) -> None:
        self.source = dict(source)
        self.target = dict(target)
        self.source_alias = source_alias
        self.target_alias = target_alias
        self.offset_lag_max = offset_lag_max
        self.policy = DefaultReplicationPolicy()
        on_source = offset_syncs_location == "source"
        self.offset_syncs_topic = self.policy.offset_syncs_topic(target_alias if on_source else source_alias)
        self.offset_syncs_props = self.source if on_source else self.target
        self._next: dict[tuple[str, int], int] = {}
        self._states: dict[tuple[str, int], _SyncState] = {}
        self.syncs_written: list[OffsetSync] = []

    def remote_topic(self, topic: str) -> str:
        """The name `topic` has on the target."""
        return self.policy.format_remote_topic(self.source_alias, topic)

    def mirror(self, topic: str, *, compacted: bool = False) -> int:
        """Copy the records of `topic` not copied yet; returns how many were copied."""
        make_topic(self.offset_syncs_props, self.offset_syncs_topic, 1, **COMPACTED)
        consumer = confluent_consumer(self.source, **{"group.id": "strait-mirror-sim", "enable.auto.commit": False})
        try:
            partitions = len(consumer.list_topics(topic, timeout=10).topics[topic].partitions)
        finally:
            consumer.close()
        remote = self.remote_topic(topic)
        make_topic(self.target, remote, partitions, **(COMPACTED if compacted else {}))
        return sum(self._mirror_partition(topic, partition, remote) for partition in range(partitions))

    def _mirror_partition(self, topic: str, partition: int, remote: str) -> int:
        low, high = self._watermarks(self.source, topic, partition)
        reader = confluent_consumer(self.source, **{"group.id": "strait-mirror-sim", "enable.auto.commit": False})
        try:
            start = max(self._next.get((topic, partition), low), low)
            if start >= high:
                return 0
            reader.assign([TopicPartition(topic, partition, start)])
            upstream: list[tuple[int, bytes | None, bytes | None]] = []
            deadline = time.monotonic() + 30
            while not upstream or upstream[-1][0] < high - 1:
                assert time.monotonic() < deadline, f"{topic}-{partition}: could not read up to offset {high}"
                for message in reader.consume(num_messages=1000, timeout=1.0):
                    if message.error() is None:
                        upstream.append((message.offset() or 0, message.key(), message.value()))
        finally:
            reader.close()
        _, base = self._watermarks(self.target, remote, partition)
        produce(self.target, remote, [(key, value) for _, key, value in upstream], partition=partition)
        _, end = self._watermarks(self.target, remote, partition)
        assert end == base + len(upstream), f"{remote}-{partition}: another writer interfered ({base}->{end})"
        self._next[(topic, partition)] = high
        self._write_syncs(topic, partition, [(up, base + i) for i, (up, _, _) in enumerate(upstream)])
        return len(upstream)

    def _write_syncs(self, topic: str, partition: int, pairs: list[tuple[int, int]]) -> None:
        state = self._states.setdefault((topic, partition), _SyncState())
        syncs = [
            OffsetSync(topic, partition, up, down) for up, down in pairs if state.due(up, down, self.offset_lag_max)
        ]
        last_up, last_down = pairs[-1]
        if not syncs or syncs[-1].upstream_offset != last_up:
            syncs.append(OffsetSync(topic, partition, last_up, last_down))  # the delayed sync a commit flushes
        produce(
            self.offset_syncs_props,
            self.offset_syncs_topic,
            [(sync.record_key(), sync.record_value()) for sync in syncs],
            partition=0,
        )
        self.syncs_written.extend(syncs)

    @staticmethod
    def _watermarks(props: Mapping[str, str], topic: str, partition: int) -> tuple[int, int]:
        """Low and high watermarks, retried while a just-created topic is not known to the broker yet."""
        consumer = confluent_consumer(props, **{"group.id": "strait-mirror-sim", "enable.auto.commit": False})
        deadline = time.monotonic() + 30
        try:
            while True:
                try:
                    low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
                    return int(low), int(high)
                except KafkaException:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
        finally:
            consumer.close()
