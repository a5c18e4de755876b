"""Latest checkpoint per (flow, group, remote topic-partition), in the order read from the checkpoints topics.

Latest in log order, not the largest offset: exactly what MM2's `RemoteClusterUtils.translateOffsets`
returns after reading the same topic (a checkpoint after an upstream rewind may lower the offset).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from shared.partition_key import PartitionKey
from shared.records.checkpoint import Checkpoint

FlowKey = tuple[str, str]


@dataclass(frozen=True, slots=True)
class IndexedCheckpoint:
    """A checkpoint and when it arrived on the checkpoints topic (record timestamp, epoch ms)."""

    checkpoint: Checkpoint
    timestamp_ms: int


class CheckpointIndex:
    """(source, target) -> group -> (remote topic, partition) -> latest IndexedCheckpoint.

    Reads are O(partitions of the group) and do no I/O; `apply` is called from the feed, on the same loop.
    """

    def __init__(self) -> None:
        self._flows: dict[FlowKey, dict[str, dict[PartitionKey, IndexedCheckpoint]]] = {}
        self._count: dict[FlowKey, int] = {}
        # A group's partitions in (topic, partition) order, rebuilt only when the group gains a partition.
        self._order: dict[tuple[FlowKey, str], list[PartitionKey]] = {}
        # Bumped by every checkpoint of the group: lets readers cache what they derive from it.
        self._versions: dict[tuple[FlowKey, str], int] = {}
        self._newest_ms: dict[FlowKey, int] = {}  # the newest checkpoint's timestamp per flow (its freshness)

    def apply(self, flow: FlowKey, checkpoint: Checkpoint, timestamp_ms: int) -> None:
        """Record `checkpoint` as the latest for its group and partition on `flow`."""
        groups = self._flows.setdefault(flow, {})
        partitions = groups.setdefault(checkpoint.group, {})
        key = (checkpoint.topic, checkpoint.partition)
        if key not in partitions:
            self._count[flow] = self._count.get(flow, 0) + 1
            self._order.pop((flow, checkpoint.group), None)
        partitions[key] = IndexedCheckpoint(checkpoint, timestamp_ms)
        if timestamp_ms > self._newest_ms.get(flow, -1):
            self._newest_ms[flow] = timestamp_ms
        version_key = (flow, checkpoint.group)
        self._versions[version_key] = self._versions.get(version_key, 0) + 1

    def version(self, flow: FlowKey, group: str) -> int:
        """How many checkpoints of the group were applied on `flow` (0 if none): changes whenever its answer may."""
        return self._versions.get((flow, group), 0)

    def group(self, flow: FlowKey, group: str) -> Mapping[PartitionKey, IndexedCheckpoint] | None:
        """The group's checkpoints on `flow`, or None if none was seen."""
        return self._flows.get(flow, {}).get(group)

    def sorted_group(self, flow: FlowKey, group: str) -> list[tuple[PartitionKey, IndexedCheckpoint]] | None:
        """The group's checkpoints on `flow` in (topic, partition) order, or None if none was seen."""
        partitions = self._flows.get(flow, {}).get(group)
        if partitions is None:
            return None
        order = self._order.get((flow, group))
        if order is None:
            order = self._order[(flow, group)] = sorted(partitions)
        return [(key, partitions[key]) for key in order]

    def groups(self, flow: FlowKey) -> Mapping[str, Mapping[PartitionKey, IndexedCheckpoint]]:
        """Every group with checkpoints on `flow` (read-only view)."""
        return self._flows.get(flow, {})

    def group_count(self, flow: FlowKey) -> int:
        """How many groups have checkpoints on `flow`."""
        return len(self._flows.get(flow, {}))

    def newest_ms(self, flow: FlowKey) -> int | None:
        """Timestamp of the newest checkpoint of any group on `flow`, or None before the first."""
        return self._newest_ms.get(flow)

    def checkpoint_count(self, flow: FlowKey) -> int:
        """How many group-partitions have a checkpoint on `flow`."""
        return self._count.get(flow, 0)
