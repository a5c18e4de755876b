"""Epoch planning in plain Python (no Spark): which partitions each task copies, from where, up to where.

Invariant: a partition appears in at most one task per epoch, and a partition the target refused is
only copied up to the refused offset until its retry time comes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from services.data_mirror.work import PartitionWork, TaskSpec


@dataclass(frozen=True)
class FlowClients:
    """Per-flow settings every task of the flow needs."""

    flow: str
    source_consumer: dict[str, str]
    source_admin: dict[str, str]
    target_producer: dict[str, str]
    sync_producer: dict[str, str]
    offset_syncs_topic: str
    progress_topic: str
    exactly_once: bool
    offset_lag_max: int
    emit_offset_syncs: bool
    reset_to_latest: bool


@dataclass
class PartitionState:
    """The driver's view of one mirrored partition across epochs."""

    flow: str
    source_topic: str
    partition: int
    remote_topic: str
    next_offset: int | None = None
    high_watermark: int | None = None
    blocked_at: int | None = None
    max_record_bytes: int | None = None
    block_reason: str | None = None
    retry_at: float = 0.0
    records: int = 0
    extra: dict[str, float] = field(default_factory=dict)
    source_topic_id: str | None = None
    remote_topic_id: str | None = None

    @property
    def key(self) -> tuple[str, str, int]:
        """(flow, source topic, partition)."""
        return (self.flow, self.source_topic, self.partition)

    def restart_from(self, offset: int) -> None:
        """Copy again from `offset` (the topic on either side was made anew): forget a refused record too."""
        self.next_offset = offset
        self.blocked_at = self.block_reason = None
        self.retry_at = 0.0

    @property
    def records_behind(self) -> int | None:
        """Source end offset minus the next offset to copy, when both are known."""
        if self.high_watermark is None or self.next_offset is None:
            return None
        return max(0, self.high_watermark - self.next_offset)

    def work(self, now: float) -> PartitionWork | None:
        """This epoch's work for the partition, or None when it is blocked right at the refused offset."""
        stop_before = self.blocked_at if self.blocked_at is not None and now < self.retry_at else None
        if stop_before is not None and self.next_offset is not None and self.next_offset >= stop_before:
            return None
        return PartitionWork(
            self.flow,
            self.source_topic,
            self.partition,
            self.remote_topic,
            self.next_offset,
            stop_before,
            self.max_record_bytes,
            self.source_topic_id,
            self.remote_topic_id,
        )


def plan_epoch(
    states: list[PartitionState], flows: dict[str, FlowClients], *, tasks_per_flow: int, epoch_ms: int, now: float
) -> list[TaskSpec]:
    """Spread each flow's partitions round-robin over at most `tasks_per_flow` tasks (stable slots)."""
    specs: list[TaskSpec] = []
    for flow_name, clients in sorted(flows.items()):
        work = [
            item
            for state in sorted((s for s in states if s.flow == flow_name), key=lambda s: s.key)
            if (item := state.work(now)) is not None
        ]
        if not work:
            continue
        slots = max(1, min(tasks_per_flow, len(work)))
        buckets: list[list[PartitionWork]] = [[] for _ in range(slots)]
        for index, item in enumerate(work):
            buckets[index % slots].append(item)
        specs.extend(
            TaskSpec(
                flow=flow_name,
                slot=slot,
                partitions=tuple(bucket),
                source_consumer=clients.source_consumer,
                source_admin=clients.source_admin,
                target_producer=clients.target_producer,
                sync_producer=clients.sync_producer,
                offset_syncs_topic=clients.offset_syncs_topic,
                progress_topic=clients.progress_topic,
                exactly_once=clients.exactly_once,
                offset_lag_max=clients.offset_lag_max,
                emit_offset_syncs=clients.emit_offset_syncs,
                epoch_ms=epoch_ms,
                reset_to_latest=clients.reset_to_latest,
            )
            for slot, bucket in enumerate(buckets)
        )
    return specs
