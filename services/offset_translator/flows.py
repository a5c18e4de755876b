"""Which flows the translator serves and where each flow's internal topics live (MM2 names, per its policy)."""

from __future__ import annotations

from dataclasses import dataclass

from shared.config import FlowConfig, MirrorMakerConfig
from shared.flow_context import FlowContext
from shared.replication_policy import ReplicationPolicy, replication_policy_for

FlowKey = tuple[str, str]


@dataclass(frozen=True, slots=True)
class ServedFlow:
    """One flow and the names and places of the topics the translator follows for it."""

    source: str
    target: str
    policy: ReplicationPolicy
    checkpoints_topic: str
    offset_syncs_topic: str
    offset_syncs_cluster: str
    heartbeats_topic: str

    @property
    def key(self) -> FlowKey:
        """(source, target)."""
        return (self.source, self.target)

    @property
    def name(self) -> str:
        """`source->target`."""
        return f"{self.source}->{self.target}"

    @classmethod
    def of(cls, flow: FlowConfig) -> ServedFlow:
        """Topic names from the flow's settings: checkpoints on the target, offset syncs per their location."""
        context = FlowContext.of(flow)
        topics, syncs = context.topics, context.offset_syncs
        return cls(
            source=flow.source,
            target=flow.target,
            policy=topics.policy,
            checkpoints_topic=topics.checkpoints_topic,
            offset_syncs_topic=syncs.topic,
            offset_syncs_cluster=syncs.cluster,
            heartbeats_topic=topics.remote_heartbeats_topic,
        )


def cluster_policy(config: MirrorMakerConfig, alias: str) -> ReplicationPolicy:
    """The policy that reads topic names on cluster `alias`: that of a flow into it (as MirrorClient's config)."""
    into = [flow for flow in config.flows if flow.target == alias]
    chosen = next((flow for flow in into if flow.enabled), into[0] if into else None)
    if chosen is None:
        return replication_policy_for("default")
    settings = chosen.settings
    # Like MirrorClient, which has no source alias: identity names are then never read as remote.
    return replication_policy_for(
        settings.replication_policy_class,
        separator=settings.replication_policy_separator,
        internal_topic_separator_enabled=settings.internal_topic_separator_enabled,
    )
