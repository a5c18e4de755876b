"""Read where MM2 and Strait stand for one flow, and where the source's partitions begin and end.

Every position read here means "the next source offset to copy": MM2's stored last-copied offset N becomes N + 1
(as MM2 4.x seeks on restart; a stored offset below 0 counts as no position), Strait's progress is already that.
"""

from __future__ import annotations

from dataclasses import dataclass

import structlog

from services.cli.migration.plan import Direction, PartitionState
from shared.config import FlowConfig
from shared.errors import CodecError
from shared.flow_context import FlowContext
from shared.kafka.end_offsets import partition_watermarks
from shared.kafka.partition_reader import read_all_partitions
from shared.kafka.topic_admin import TopicAdmin
from shared.partition_key import PartitionKey
from shared.progress_store import load_progress
from shared.records.connect_offsets import SOURCE_CONNECTOR, SourcePartitionKey, decode_last_copied
from shared.replication_policy import mm2_connect_offsets_topic

_log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class FlowPositions:
    """Both tools' positions for one flow's source partitions, the source's offsets, and the topic names."""

    mm2: dict[PartitionKey, int]
    strait: dict[PartitionKey, int]
    watermarks: dict[PartitionKey, tuple[int, int]]
    mm2_offsets_topic: str

    def states(self, direction: Direction) -> list[PartitionState]:
        """Each source partition as the plan sees it: the stopping tool's position first."""
        handing, taking = (self.mm2, self.strait) if direction == "from-mm2" else (self.strait, self.mm2)
        return [
            PartitionState(topic, partition, low, high, handing.get((topic, partition)), taking.get((topic, partition)))
            for (topic, partition), (low, high) in sorted(self.watermarks.items())
        ]


def mm2_positions(flow: FlowConfig, offsets_topic: str, *, timeout_s: float) -> dict[PartitionKey, int]:
    """The next offset MM2 would copy per source partition of `flow`, from its Connect offsets topic on the target.

    Records of MM2's other connectors (checkpoints, heartbeats) and of other source clusters are passed over.
    """
    found: dict[PartitionKey, int] = {}
    by_partition = read_all_partitions(flow.target_consumer_props(), offsets_topic, timeout_s=timeout_s)
    for records in by_partition.values():  # one key always lands on one partition: log order is write order
        for record in records:
            try:
                key = SourcePartitionKey.decode(record.key or b"")
            except CodecError:
                continue
            if key.connector != SOURCE_CONNECTOR or key.cluster != flow.source:
                continue
            where = (key.topic, key.partition)
            if record.value is None:
                found.pop(where, None)
                continue
            try:
                last_copied = decode_last_copied(record.value)
            except CodecError as exc:
                _log.warning("mm2_position_skipped", topic=offsets_topic, offset=record.offset, error=str(exc))
                continue
            if last_copied < 0:
                found.pop(where, None)  # MM2 treats a negative offset as no position
            else:
                found[where] = last_copied + 1
    return found


def strait_positions(flow: FlowConfig, *, timeout_s: float) -> dict[PartitionKey, int]:
    """The next offset Strait's data-mirror would copy per source partition of `flow` (none before its first run)."""
    topic = FlowContext.of(flow).progress_topic
    if topic not in TopicAdmin(flow.target, flow.target_admin_props(), timeout_s=timeout_s).partition_counts():
        return {}
    progress = load_progress(flow.target_consumer_props(), topic, flow.name, timeout_s=timeout_s)
    return {where: entry.next_offset for where, entry in progress.items()}


def source_partitions(flow: FlowConfig, *, timeout_s: float) -> dict[str, int]:
    """Each source topic the flow mirrors, with its partition count."""
    rule = FlowContext.of(flow).topics
    counts = TopicAdmin(flow.source, flow.source_admin_props(), timeout_s=timeout_s).partition_counts()
    return {topic: count for topic, count in sorted(counts.items()) if rule.should_replicate(topic)}


def read_positions(flow: FlowConfig, *, offsets_topic: str | None = None, timeout_s: float = 30) -> FlowPositions:
    """Everything the plan needs for `flow` (blocking)."""
    topic = offsets_topic or mm2_connect_offsets_topic(flow.source)
    partitions = source_partitions(flow, timeout_s=timeout_s)
    return FlowPositions(
        mm2=mm2_positions(flow, topic, timeout_s=timeout_s),
        strait=strait_positions(flow, timeout_s=timeout_s),
        watermarks=partition_watermarks(flow.source_admin_props(), partitions, timeout_s=timeout_s),
        mm2_offsets_topic=topic,
    )
