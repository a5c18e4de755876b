"""A flow's topic rule: which source topics it replicates and what they are called on the target."""

from __future__ import annotations

import re
from dataclasses import dataclass

from shared.config import FlowConfig, FlowSettings
from shared.filters import DefaultTopicFilter, TopicFilter
from shared.replication_policy import ReplicationPolicy, replication_policy_for, should_replicate_topic

_TOPIC_UNSAFE = re.compile(r"[^a-zA-Z0-9._-]")


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

    @property
    def checkpoints_topic(self) -> str:
        """`<source>.checkpoints.internal`, on the target: the flow's checkpoints (MM2's name and bytes)."""
        return self.policy.checkpoints_topic(self.source)

    @property
    def heartbeats_topic(self) -> str:
        """`heartbeats`: where the flow's heartbeats are emitted, on its target (MM2's name)."""
        return self.policy.heartbeats_topic()

    @property
    def remote_heartbeats_topic(self) -> str:
        """The source's heartbeats as mirrored into the target (`A.heartbeats`): what tells the flow is alive."""
        return self.remote_topic(self.policy.heartbeats_topic())

    def lease_topic(self, service: str) -> str:
        """`strait.lease.<service>.<source>.<target>.internal`: the flow's coordination topic on its target."""
        return _TOPIC_UNSAFE.sub("_", f"strait.lease.{service}.{self.source}.{self.target}.internal")

    def lease_group(self, service: str) -> str:
        """`strait.<service>.<source>-><target>`: the consumer group whose membership is `service`'s lease."""
        return f"strait.{service}.{self.source}->{self.target}"


@dataclass(frozen=True, slots=True)
class OffsetSyncsPlace:
    """Where a flow's offset syncs live: MM2's `offset-syncs.topic.location` (target by default)."""

    topic: str
    cluster: str  # the alias of the cluster that holds the topic
    on_source: bool

    def consumer_props(self, flow: FlowConfig) -> dict[str, str]:
        """A consumer of the cluster that holds the topic, as `flow` configures it."""
        return flow.source_consumer_props() if self.on_source else flow.target_consumer_props()


def offset_syncs_place(flow: FlowConfig, policy: ReplicationPolicy) -> OffsetSyncsPlace:
    """`mm2-offset-syncs.<other cluster>.internal` (as `flow`'s `policy` names it) on the source or the target, as
    the flow's settings say."""
    if flow.settings.offset_syncs_topic_location == "source":
        return OffsetSyncsPlace(policy.offset_syncs_topic(flow.target), flow.source, on_source=True)
    return OffsetSyncsPlace(policy.offset_syncs_topic(flow.source), flow.target, on_source=False)
