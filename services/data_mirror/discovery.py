"""Which source partitions a flow mirrors right now: filter-passing topics whose remote topic exists.

A partition is mirrored only when the remote topic already has it, so data-mirror never writes to a
topic that topic-sync has not created (no auto-created topics with the wrong partition count).
"""

from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient, ConfigResource

from services.data_mirror.partition_copy import TOPIC_GONE
from shared.config import FlowConfig
from shared.flow_topics import FlowTopics
from shared.kafka.errors import translate_kafka_error

LIST_TIMEOUT_S = 15


@dataclass(frozen=True)
class MirroredTopic:
    """A source topic, its remote name and how many of its partitions can be copied now."""

    flow: str
    source_topic: str
    remote_topic: str
    partitions: int
    source_partitions: int


def _topic_partitions(admin: AdminClient, cluster: str) -> dict[str, int]:
    try:
        metadata = admin.list_topics(timeout=LIST_TIMEOUT_S)
    except Exception as exc:  # KafkaException: broker unreachable, authorization, timeout
        raise translate_kafka_error(exc, operation=f"list topics on {cluster}") from exc
    return {name: len(topic.partitions) for name, topic in metadata.topics.items() if topic.error is None}


def max_message_bytes(admin: AdminClient, cluster: str, topics: list[str]) -> dict[str, int]:
    """Each topic's `max.message.bytes`: the largest record batch its broker accepts."""
    if not topics:
        return {}
    resources = [ConfigResource(ConfigResource.Type.TOPIC, topic) for topic in topics]
    limits: dict[str, int] = {}
    try:
        futures = admin.describe_configs(resources, request_timeout=LIST_TIMEOUT_S)
        for resource, future in futures.items():
            entry = future.result(timeout=LIST_TIMEOUT_S).get("max.message.bytes")
            if entry is not None and entry.value is not None:
                limits[resource.name] = int(entry.value)
    except Exception as exc:  # KafkaException: broker unreachable or not allowed to describe configs
        raise translate_kafka_error(exc, operation=f"describe topic configs on {cluster}") from exc
    return limits


def topic_ids(admin: AdminClient, cluster: str, topics: list[str]) -> dict[str, str]:
    """Each topic's id, which changes when a topic is deleted and made again.

    A topic that vanished since it was listed is left out; any other failure raises, so a recreated topic is
    never missed silently (the driver reports it as a discovery error and looks again next round).
    """
    if not topics:
        return {}
    ids: dict[str, str] = {}
    operation = f"describe topics on {cluster}"
    try:
        futures = admin.describe_topics(TopicCollection(topics), request_timeout=LIST_TIMEOUT_S)
        for topic, future in futures.items():
            try:
                ids[topic] = str(future.result(timeout=LIST_TIMEOUT_S).topic_id)
            except KafkaException as exc:
                error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
                if error is None or error.code() not in TOPIC_GONE:
                    raise
    except Exception as exc:  # KafkaException, TimeoutError: unreachable, not allowed to describe, too slow
        raise translate_kafka_error(exc, operation=operation) from exc
    return ids


def discover(
    flow: FlowConfig, source_admin: AdminClient, target_admin: AdminClient
) -> tuple[list[MirroredTopic], list[str]]:
    """(topics to mirror, source topics still waiting for their remote topic)."""
    rule = FlowTopics.for_flow(flow)
    source = _topic_partitions(source_admin, flow.source)
    target = _topic_partitions(target_admin, flow.target)
    mirrored: list[MirroredTopic] = []
    waiting: list[str] = []
    for topic, count in sorted(source.items()):
        if not rule.should_replicate(topic):
            continue
        remote = rule.remote_topic(topic)
        if remote not in target:
            waiting.append(topic)
            continue
        mirrored.append(MirroredTopic(flow.name, topic, remote, min(count, target[remote]), count))
    return mirrored, waiting
