"""What the driver hands a long-lived copy task and what the task hands back: small, picklable, no records."""

from __future__ import annotations

from dataclasses import dataclass

from shared.config.transforms import TransformSpec
from shared.control.topic_names import mirror_transactional_id
from shared.replication_policy import ReplicationPolicy
from shared.reshape.reshaper import Reshaper

# The target producer's batch.size when the flow sets none (librdkafka's default). The driver caps it under the
# remote topics' smallest max.message.bytes and puts it in every TaskSpec (`flow_runtime`), for both copiers.
DEFAULT_BATCH_BYTES = 1_000_000


@dataclass(frozen=True)
class PartitionWork:
    """Copy `source_topic`/`partition` to the same partition of `remote_topic`.

    There is no start offset: a task always starts from the progress committed on the target. The topic ids
    (when known) are the topics' ids now; committed progress written for other ids means a topic was deleted
    and made again, so the task copies it again from the start.
    """

    source_topic: str
    partition: int
    remote_topic: str
    max_record_bytes: int | None = None
    source_topic_id: str | None = None
    remote_topic_id: str | None = None

    @property
    def key(self) -> tuple[str, int]:
        """(source topic, partition)."""
        return (self.source_topic, self.partition)

    @property
    def remote_key(self) -> tuple[str, int]:
        """(remote topic, partition)."""
        return (self.remote_topic, self.partition)


@dataclass(frozen=True)
class TaskSpec:
    """One long-lived copy task: a slot of one flow, its partitions and what it needs to reach both clusters.

    The task runs until the driver asks this (slot, generation) to hand over on the control topic, read from
    `control_from_offset` on, or until it fails.
    """

    flow: str
    slot: int
    generation: int
    partitions: tuple[PartitionWork, ...]
    source_consumer: dict[str, str]
    source_admin: dict[str, str]
    target_producer: dict[str, str]
    target_consumer: dict[str, str]
    sync_producer: dict[str, str]
    offset_syncs_topic: str
    progress_topic: str
    control_topic: str
    control_from_offset: int
    exactly_once: bool
    copy_batches: bool  # forward source batches unchanged where exact (else every record one by one)
    offset_lag_max: int
    emit_offset_syncs: bool
    reset_to_latest: bool
    commit_interval_ms: int
    blocked_retry_s: float
    transforms: tuple[TransformSpec, ...] = ()  # the flow's transforms, applied to each record it copies (`reshape`)
    provenance: bool = False  # add the provenance header; never copy a record that came from the target
    policy: ReplicationPolicy | None = None  # with provenance: a header is trusted on the topic its path names only

    @property
    def aliases(self) -> tuple[str, str]:
        """(source, target) cluster aliases of the flow."""
        source, _, target = self.flow.partition("->")
        return source, target

    def reshaper(self) -> Reshaper:
        """The flow's transforms and provenance rules, as both copiers apply them."""
        return Reshaper(*self.aliases, self.transforms, provenance=self.provenance, policy=self.policy)

    @property
    def transactional_id(self) -> str | None:
        """Stable per (flow, slot): a new task of the slot fences any earlier one that may still be open."""
        return mirror_transactional_id(self.flow, self.slot) if self.exactly_once else None


@dataclass
class TaskResult:
    """How a task ended: handed over cleanly (`error` None) or failed, with what it copied in its life."""

    flow: str
    slot: int
    generation: int
    error: str | None = None
    records: int = 0
    commits: int = 0
    duration_s: float = 0.0
    partitions: int = 0  # how many of its partitions it copied (the others were gone from the source)
