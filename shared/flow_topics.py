"""A flow's topic rule: which source topics it replicates and what they are called on the target."""

from __future__ import annotations

from dataclasses import dataclass

from shared.config import FlowConfig, FlowSettings
from shared.filters import DefaultTopicFilter, TopicFilter
from shared.replication_policy import ReplicationPolicy, replication_policy_for, should_replicate_topic


@dataclass(frozen=True, slots=True)
class FlowTopics:
    """MM2's full topic rule for `source -> target`: filter, heartbeats, internal topics and cycles."""

    source: str
    target: str
    policy: ReplicationPolicy
    topic_filter: TopicFilter
    heartbeats_replication_enabled: bool = True

    @classmethod
    def for_settings(cls, settings: FlowSettings, *, source: str, target: str) -> FlowTopics:
        """The rule built from a flow's settings (policy, separator, topics, topics.exclude, heartbeats)."""
        policy = replication_policy_for(
            settings.replication_policy_class,
            separator=settings.replication_policy_separator,
            internal_topic_separator_enabled=settings.internal_topic_separator_enabled,
            source_cluster_alias=source,
        )
        return cls(
            source=source,
            target=target,
            policy=policy,
            topic_filter=DefaultTopicFilter(settings.topics, settings.topics_exclude),
            heartbeats_replication_enabled=settings.heartbeats_replication_enabled,
        )

    @classmethod
    def for_flow(cls, flow: FlowConfig) -> FlowTopics:
        """The rule of `flow`."""
        return cls.for_settings(flow.settings, source=flow.source, target=flow.target)

    def should_replicate(self, topic: str) -> bool:
        """True if the flow replicates source topic `topic` (never internal topics, never a cycle)."""
        return should_replicate_topic(
            self.policy,
            topic,
            target_alias=self.target,
            topic_filter=self.topic_filter,
            heartbeats_replication_enabled=self.heartbeats_replication_enabled,
        )

    def remote_topic(self, topic: str) -> str:
        """The name on the target of source topic `topic`."""
        return self.policy.format_remote_topic(self.source, topic)
