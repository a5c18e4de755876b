"""What the driver hands a Spark task and what the task hands back: small, picklable, no records."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class SyncPoint:
    """An (upstream, downstream) offset pair of one mirrored record."""

    upstream: int
    downstream: int


@dataclass(frozen=True)
class PartitionWork:
    """Copy `source_topic`/`partition` to the same partition of `remote_topic` from `start_offset`.

    `start_offset` None means "no progress yet": the task resolves it with the reset policy and reports it.
    `stop_before` keeps the task short of an offset the target refused before. The topic ids (when known) are
    written with the progress, so a restart notices a topic that was deleted and made again meanwhile.
    """

    flow: str
    source_topic: str
    partition: int
    remote_topic: str
    start_offset: int | None
    stop_before: int | None = None
    max_record_bytes: int | None = None
    source_topic_id: str | None = None
    remote_topic_id: str | None = None


@dataclass(frozen=True)
class TaskSpec:
    """One Spark task of one epoch: partitions of one flow plus everything needed to reach both clusters."""

    flow: str
    slot: int
    partitions: tuple[PartitionWork, ...]
    source_consumer: dict[str, str]
    source_admin: dict[str, str]
    target_producer: dict[str, str]
    sync_producer: dict[str, str]
    offset_syncs_topic: str
    progress_topic: str
    exactly_once: bool
    offset_lag_max: int
    emit_offset_syncs: bool
    epoch_ms: int
    reset_to_latest: bool
    max_records_per_partition: int = 1_000_000


@dataclass
class PartitionResult:
    """What one partition did in one epoch (counts and offsets only)."""

    source_topic: str
    partition: int
    remote_topic: str
    start_offset: int
    next_offset: int
    records: int = 0
    bytes: int = 0
    high_watermark: int | None = None
    first_sync: SyncPoint | None = None
    last_sync: SyncPoint | None = None
    syncs_written: int = 0
    age_ms_sum: float = 0.0
    age_ms_max: float = 0.0
    latency_ms_sum: float = 0.0
    latency_ms_max: float = 0.0
    failed_offset: int | None = None
    failure: str | None = None
    expired_records: int = 0


@dataclass
class TaskResult:
    """One task's partitions, plus a task-level error that aborted the whole epoch for it (if any)."""

    flow: str
    slot: int
    partitions: list[PartitionResult] = field(default_factory=list)
    error: str | None = None
    duration_s: float = 0.0
