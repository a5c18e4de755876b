"""Plan one topic-sync round from two metadata listings: what to create, what to grow, what to announce.

Remote topics only ever appear or grow: a remote topic with more partitions than its source is left as it
is, and a source topic that disappears leaves its remote topic in place.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from shared.control import RemoteTopic
from shared.kafka.topic_admin import TopicInfo


@dataclass(frozen=True, slots=True)
class TopicPlan:
    """`create`: remote topics to make; `grow`: remote topic -> new partition count; `existing`: source -> remote."""

    create: tuple[RemoteTopic, ...] = ()
    grow: dict[str, int] = field(default_factory=dict)
    existing: dict[str, str] = field(default_factory=dict)


def replicated(source: Mapping[str, TopicInfo], should_replicate: Callable[[str], bool]) -> dict[str, int]:
    """Source topic -> partition count, for the source topics the flow replicates."""
    return {topic: info.partitions for topic, info in source.items() if should_replicate(topic)}


def plan_topics(
    source: Mapping[str, int], target: Mapping[str, TopicInfo], remote_name: Callable[[str], str]
) -> TopicPlan:
    """Create missing remote topics with the source's partition count; grow those with fewer partitions."""
    create: list[RemoteTopic] = []
    grow: dict[str, int] = {}
    existing: dict[str, str] = {}
    for topic, partitions in sorted(source.items()):
        remote = remote_name(topic)
        there = target.get(remote)
        if there is None:
            create.append(RemoteTopic(source_topic=topic, remote_topic=remote, partitions=partitions))
            continue
        existing[topic] = remote
        if there.partitions < partitions:
            grow[remote] = partitions
    return TopicPlan(create=tuple(create), grow=grow, existing=existing)


def ready_topics(
    source: Mapping[str, int], target: Mapping[str, TopicInfo], remote_name: Callable[[str], str]
) -> tuple[RemoteTopic, ...]:
    """The remote topics that exist and are ready, sorted by source topic, as TopicsChanged announces them.

    A remote topic still waiting to grow is announced with the partitions it has (never more than the source's).
    """
    topics: list[RemoteTopic] = []
    for topic, partitions in sorted(source.items()):
        remote = remote_name(topic)
        there = target.get(remote)
        if there is None or not there.ready or there.partitions < 1:
            continue
        topics.append(
            RemoteTopic(source_topic=topic, remote_topic=remote, partitions=min(partitions, there.partitions))
        )
    return tuple(topics)
