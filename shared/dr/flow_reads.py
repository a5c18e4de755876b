"""What the DR actions read of a flow (blocking): its checkpoints, offset syncs, progress, ends and group positions.

Each read goes to the cluster that holds the topic (checkpoints and progress on the target, offset syncs where the
flow keeps them), so an action can say which cluster did not answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from shared.config import FlowConfig
from shared.control.topic_names import DR_READER_GROUP
from shared.errors import CodecError
from shared.flow_context import FlowContext
from shared.kafka.end_offsets import committed_watermarks, listed_watermarks
from shared.kafka.partition_reader import read_offsets, read_to_end
from shared.kafka.topic_admin import TopicAdmin
from shared.offset_sync_store import OffsetSyncStore
from shared.partition_key import PartitionKey
from shared.progress_store import load_progress
from shared.records.checkpoint import Checkpoint
from shared.records.progress import Progress
from shared.records.provenance import Provenance, provenance_of

READ_TIMEOUT_S = 30.0  # one read of a flow's topics, unless the action as a whole has less time
MIN_READ_TIMEOUT_S = 10.0  # what one read gets however short the action's timeout: a slow answer is not an outage


def read_timeout(action_timeout_s: float) -> float:
    """Each read's bound within an action: the operator's timeout (how long the copy may take to drain), at most
    READ_TIMEOUT_S and at least MIN_READ_TIMEOUT_S. With the timeout itself as the bound, a busy but healthy
    cluster that took 3 s to list offsets failed a failover half-way as unavailable (503) after it stopped the flow."""
    return max(MIN_READ_TIMEOUT_S, min(READ_TIMEOUT_S, action_timeout_s))


GroupCheckpoints = dict[str, dict[PartitionKey, Checkpoint]]  # group -> (remote topic, partition) -> the latest


class FlowReads:
    """The reads of one flow, each bounded by `timeout_s`."""

    def __init__(self, flow: FlowConfig, *, timeout_s: float = READ_TIMEOUT_S) -> None:
        self.flow = flow
        self.context = FlowContext.of(flow)
        self.timeout_s = timeout_s

    def progress(self) -> dict[PartitionKey, Progress]:
        """data-mirror's committed position of every partition it copied (on the target)."""
        flow = self.flow
        return load_progress(
            flow.target_consumer_props(), self.context.progress_topic, flow.name, timeout_s=self.timeout_s
        )

    def checkpoints(self) -> GroupCheckpoints:
        """Every group's latest checkpoint per remote partition (on the target); undecodable records skipped, as
        MM2's reader skips them."""
        latest: GroupCheckpoints = {}
        topic = self.context.topics.checkpoints_topic
        for record in read_to_end(
            self.flow.target_consumer_props(), topic, group_id=DR_READER_GROUP, timeout_s=self.timeout_s
        ):
            if record.key is None or record.value is None:
                continue
            try:
                checkpoint = Checkpoint.decode(record.key, record.value)
            except CodecError:
                continue
            latest.setdefault(checkpoint.group, {})[(checkpoint.topic, checkpoint.partition)] = checkpoint
        return latest

    def syncs(self) -> OffsetSyncStore:
        """Every offset sync the flow's syncs topic holds, read to its end (wherever it lives)."""
        place = self.context.offset_syncs
        store = OffsetSyncStore(initialization_must_read_to_end=False)
        for record in read_to_end(
            place.consumer_props(self.flow), place.topic, group_id=DR_READER_GROUP, timeout_s=self.timeout_s
        ):
            if record.key is None or record.value is None:
                continue
            try:
                store.handle_record(record.key, record.value, record.headers)
            except CodecError:
                continue
        store.mark_read_to_end()
        return store

    def source_partitions(self) -> list[PartitionKey]:
        """Every partition of the source topics the flow's filter takes, heartbeats left out (the source's own
        heartbeat emitter writes them: they say nothing of the applications)."""
        topics = self.context.topics
        counts = TopicAdmin(
            self.flow.source, self.flow.source_admin_props(), timeout_s=self.timeout_s
        ).partition_counts()
        return sorted(
            (topic, partition)
            for topic, count in counts.items()
            if topics.should_replicate(topic) and not topics.policy.is_heartbeats_topic(topic)
            for partition in range(count)
        )

    def source_marks(self, partitions: Sequence[PartitionKey]) -> dict[PartitionKey, tuple[int, int]]:
        """Each source partition's log start and what a read_committed copy can reach now (its last stable offset)."""
        return committed_watermarks(self.flow.source_admin_props(), list(partitions), timeout_s=self.timeout_s)

    def target_ends(self, partitions: Iterable[PartitionKey]) -> dict[PartitionKey, int]:
        """The remote partitions' ends on the target (their high watermarks)."""
        wanted = list(partitions)
        marks = listed_watermarks(self.flow.target_admin_props(), wanted, timeout_s=self.timeout_s)
        return {key: end for key, (_start, end) in marks.items()}

    def remote(self, key: PartitionKey) -> PartitionKey:
        """The remote partition on the target of a source partition."""
        return (self.context.topics.remote_topic(key[0]), key[1])


def provenance_at(
    props: dict[str, str], topic: str, offsets: dict[int, int], *, timeout_s: float
) -> dict[int, Provenance | None]:
    """partition -> the provenance of the record at `offsets[partition]` (None: no record there, or none carried)."""
    found = read_offsets(props, topic, {p: (o, o + 1) for p, o in offsets.items()}, timeout_s=timeout_s)
    answer: dict[int, Provenance | None] = {}
    for partition, records in found.items():
        raw = provenance_of(list(records[0].headers)) if records else None
        try:
            answer[partition] = Provenance.decode(raw) if raw is not None else None
        except CodecError:
            answer[partition] = None
    return answer
