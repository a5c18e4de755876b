"""Which source partitions a flow mirrors right now: filter-passing topics whose remote topic exists.

A partition is mirrored only when the remote topic already has it, so data-mirror never writes to a
topic that topic-sync has not created (no auto-created topics with the wrong partition count).
"""

from __future__ import annotations

from dataclasses import dataclass

from shared.flow_context import FlowContext
from shared.kafka.topic_admin import TopicAdmin

LIST_TIMEOUT_S = 15


@dataclass(frozen=True)
class MirroredTopic:
    """A source topic, its remote name and how many of its partitions can be copied now."""

    flow: str
    source_topic: str
    remote_topic: str
    partitions: int
    source_partitions: int


def discover(
    context: FlowContext, source_admin: TopicAdmin, target_admin: TopicAdmin
) -> tuple[list[MirroredTopic], list[str]]:
    """(topics to mirror, source topics still waiting for their remote topic); StraitErrors name the cluster."""
    rule = context.topics
    source = source_admin.partition_counts()
    target = target_admin.partition_counts()
    mirrored: list[MirroredTopic] = []
    waiting: list[str] = []
    for topic, count in sorted(source.items()):
        if not rule.should_replicate(topic):
            continue
        remote = rule.remote_topic(topic)
        if remote not in target:
            waiting.append(topic)
            continue
        mirrored.append(MirroredTopic(context.name, topic, remote, min(count, target[remote]), count))
    return mirrored, waiting
