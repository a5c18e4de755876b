"""Slot planning in plain Python (no Spark): which long-lived task slot owns which source partitions.

Invariants: a partition is in exactly one slot of its flow; its slot depends only on its topic, its number
and the slot count, so it keeps its slot across re-plans (adding a topic or a partition moves nothing else)
and across driver restarts with the same slot count.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from services.data_mirror.work import PartitionWork, TaskSpec
from shared.config.transforms import TransformSpec
from shared.replication_policy import ReplicationPolicy


@dataclass(frozen=True)
class FlowClients:
    """Per-flow settings every task of the flow needs."""

    flow: str
    source_consumer: dict[str, str]
    source_admin: dict[str, str]
    target_producer: dict[str, str]
    target_consumer: dict[str, str]
    sync_producer: dict[str, str]
    offset_syncs_topic: str
    progress_topic: str
    control_topic: str
    exactly_once: bool
    copy_batches: bool
    offset_lag_max: int
    emit_offset_syncs: bool
    reset_to_latest: bool
    transforms: tuple[TransformSpec, ...] = ()
    provenance: bool = False
    policy: ReplicationPolicy | None = None  # with provenance: the names a copy's topic has along its path

    def task(
        self,
        slot: int,
        generation: int,
        partitions: tuple[PartitionWork, ...],
        *,
        control_from_offset: int,
        commit_interval_ms: int,
        blocked_retry_s: float,
    ) -> TaskSpec:
        """The spec of one long-lived task of this flow."""
        return TaskSpec(
            flow=self.flow,
            slot=slot,
            generation=generation,
            partitions=partitions,
            source_consumer=self.source_consumer,
            source_admin=self.source_admin,
            target_producer=self.target_producer,
            target_consumer=self.target_consumer,
            sync_producer=self.sync_producer,
            offset_syncs_topic=self.offset_syncs_topic,
            progress_topic=self.progress_topic,
            control_topic=self.control_topic,
            control_from_offset=control_from_offset,
            exactly_once=self.exactly_once,
            copy_batches=self.copy_batches,
            offset_lag_max=self.offset_lag_max,
            emit_offset_syncs=self.emit_offset_syncs,
            reset_to_latest=self.reset_to_latest,
            commit_interval_ms=commit_interval_ms,
            blocked_retry_s=blocked_retry_s,
            transforms=self.transforms,
            provenance=self.provenance,
            policy=self.policy,
        )


@dataclass
class PartitionState:
    """The driver's view of one mirrored partition, learnt from the progress records its task commits."""

    flow: str
    source_topic: str
    partition: int
    remote_topic: str
    next_offset: int | None = None
    high_watermark: int | None = None
    blocked_at: int | None = None
    max_record_bytes: int | None = None
    block_reason: str | None = None
    records: int = 0
    copy_path: str | None = None  # how its records travelled lately: "batches" or why they were re-encoded
    source_topic_id: str | None = None
    remote_topic_id: str | None = None
    behind_since_ms: int | None = None  # since when its oldest record not yet copied has been on the source

    @property
    def key(self) -> tuple[str, str, int]:
        """(flow, source topic, partition)."""
        return (self.flow, self.source_topic, self.partition)

    @property
    def records_behind(self) -> int | None:
        """Source end offset minus the next offset to copy, when both are known."""
        if self.high_watermark is None or self.next_offset is None:
            return None
        return max(0, self.high_watermark - self.next_offset)

    def work(self) -> PartitionWork:
        """What a task needs to copy this partition."""
        return PartitionWork(
            self.source_topic,
            self.partition,
            self.remote_topic,
            self.max_record_bytes,
            self.source_topic_id,
            self.remote_topic_id,
        )


def slot_of(topic: str, partition: int, slots: int) -> int:
    """A partition's slot: consecutive partitions of a topic on consecutive slots, from a per-topic start."""
    return (zlib.crc32(topic.encode()) + partition) % slots


def assign_slots(states: list[PartitionState], slots: int) -> dict[int, tuple[PartitionWork, ...]]:
    """slot -> the partitions it copies (sorted), for one flow's partitions; slots without work are left out."""
    buckets: dict[int, list[PartitionWork]] = {}
    for state in sorted(states, key=lambda s: s.key):
        buckets.setdefault(slot_of(state.source_topic, state.partition, slots), []).append(state.work())
    return {slot: tuple(works) for slot, works in sorted(buckets.items())}
