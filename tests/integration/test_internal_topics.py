"""Strait's own internal topics (progress, status, control) roll small segments, so the log cleaner keeps them near
one record per key: they take a record per partition or per instance every second or few and are read whole when a
process starts. A topic an earlier version made gets the settings when a service ensures it; what an operator set
on the topic stays."""

from __future__ import annotations

from shared.kafka.factories import confluent_admin
from shared.kafka.topic_admin import TopicAdmin
from shared.kafka.topics import COMPACTED, ROLLED, ROLLED_COMPACTED, create_topic
from shared.localkafka import KafkaCluster


def topic_settings(cluster: KafkaCluster, topic: str) -> dict[str, str | None]:
    """The topic's cleanup policy and segment settings, as `kafka-configs --describe` would show them."""
    described, errors = TopicAdmin(cluster.name, cluster.client_properties(), timeout_s=30).describe_configs([topic])
    assert not errors, errors
    wanted = {"cleanup.policy", *ROLLED}
    return {entry.name: entry.value for entry in described[topic] if entry.name in wanted}


def test_strait_topics_roll_small_segments_and_an_older_one_is_brought_in_line(
    cluster_b: KafkaCluster, unique: str
) -> None:
    admin = TopicAdmin("B", cluster_b.client_properties(), timeout_s=30)
    rolled = {"cleanup.policy": "compact", **ROLLED}

    new = f"strait.offsets.new-{unique}.internal"
    assert admin.ensure_internal_topic(new, replication_factor=1, configs=ROLLED_COMPACTED)
    assert topic_settings(cluster_b, new) == rolled

    older = f"strait.offsets.older-{unique}.internal"  # as an earlier version made it: compacted, broker segments
    create_topic(confluent_admin(cluster_b.client_properties()), older, configs=COMPACTED)
    assert topic_settings(cluster_b, older) != rolled
    assert not admin.ensure_internal_topic(older, replication_factor=1, configs=ROLLED_COMPACTED)
    assert topic_settings(cluster_b, older) == rolled

    chosen = f"strait.offsets.chosen-{unique}.internal"  # an operator set a segment time on it: that stays
    create_topic(confluent_admin(cluster_b.client_properties()), chosen, configs={**COMPACTED, "segment.ms": "3600000"})
    assert not admin.ensure_internal_topic(chosen, replication_factor=1, configs=ROLLED_COMPACTED)
    assert topic_settings(cluster_b, chosen) == {**rolled, "segment.ms": "3600000"}

    mm2_shaped = f"mm2-offset-syncs.{unique}.internal"  # MM2's own topics keep MM2's shape
    assert admin.ensure_internal_topic(mm2_shaped, replication_factor=1)
    assert topic_settings(cluster_b, mm2_shaped)["segment.ms"] != ROLLED["segment.ms"]
