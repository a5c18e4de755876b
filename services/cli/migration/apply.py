"""Write the planned positions in the format of the tool that takes over (blocking)."""

from __future__ import annotations

from services.cli.migration.plan import FlowPlan
from shared.config import FlowConfig
from shared.flow_context import FlowContext
from shared.kafka.record_writer import RecordWriter
from shared.kafka.topic_admin import NewTopicSpec, TopicAdmin
from shared.records.connect_offsets import SOURCE_CONNECTOR, SourcePartitionKey, encode_last_copied
from shared.records.progress import ProgressKey, encode_progress

# Connect's defaults for its offsets topic (offset.storage.partitions, compacted), used if MM2 never made it.
CONNECT_OFFSETS_PARTITIONS = 25
# Kafka's Java producer places keyed records by murmur2; Connect keeps one position per key bytes, so ours must
# land on the partition MM2's own writes use.
JAVA_PARTITIONER = {"partitioner": "murmur2_random"}


def write_strait_progress(flow: FlowConfig, plan: FlowPlan, *, timeout_s: float) -> int:
    """Write each planned position as data-mirror's progress (with both topics' ids); the count written."""
    rows = plan.to_write
    if not rows:
        return 0
    context = FlowContext.of(flow)
    topics = context.topics
    source_topics = sorted({row.state.topic for row in rows})
    target = TopicAdmin(flow.target, flow.target_admin_props(), timeout_s=timeout_s)
    source_ids = TopicAdmin(flow.source, flow.source_admin_props(), timeout_s=timeout_s).topic_ids(source_topics)
    remote_ids = target.topic_ids([topics.remote_topic(topic) for topic in source_topics])
    topic = context.progress_topic
    target.ensure_internal_topic(topic, replication_factor=flow.settings.offset_syncs_topic_replication_factor)
    records = []
    for row in rows:
        state = row.state
        assert state.handing_over is not None
        key = ProgressKey(flow.name, state.topic, state.partition).encode()
        value = encode_progress(
            state.handing_over,
            source_topic_id=source_ids.get(state.topic),
            remote_topic_id=remote_ids.get(topics.remote_topic(state.topic)),
        )
        records.append((key, value))
    writer = RecordWriter(flow.target, flow.target_producer_props())
    try:
        writer.write(topic, records, timeout_s=timeout_s)
    finally:
        writer.close(timeout_s)
    return len(records)


def write_mm2_positions(flow: FlowConfig, plan: FlowPlan, offsets_topic: str, *, timeout_s: float) -> int:
    """Write each planned position into MM2's Connect offsets topic, as MM2 writes it; the count written."""
    rows = plan.to_write
    if not rows:
        return 0
    target = TopicAdmin(flow.target, flow.target_admin_props(), timeout_s=timeout_s)
    if offsets_topic not in target.partition_counts():
        failures = target.create_topics(
            [NewTopicSpec(offsets_topic, CONNECT_OFFSETS_PARTITIONS, {"cleanup.policy": "compact"})],
            replication_factor=flow.settings.offset_syncs_topic_replication_factor,
        )
        if failures:
            raise next(iter(failures.values()))
    records = []
    for row in rows:
        state = row.state
        assert state.handing_over is not None
        key = SourcePartitionKey(SOURCE_CONNECTOR, flow.source, state.topic, state.partition)
        records.append((key.encode(), encode_last_copied(state.handing_over - 1)))
    writer = RecordWriter(flow.target, flow.target_producer_props(), **JAVA_PARTITIONER)
    try:
        writer.write(offsets_topic, records, partition=None, timeout_s=timeout_s)
    finally:
        writer.close(timeout_s)
    return len(records)
