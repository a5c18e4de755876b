"""One flow as a service sees it: its names, where its topics live, and the per-flow clients every service builds
the same way. Services take a `FlowContext` instead of deriving each of these from the config on their own, so a
rule (a topic's place, a lease's group, the replication factor of Strait's own topics) is applied once."""

from __future__ import annotations

from dataclasses import dataclass

from shared.cluster_watch import ClusterWatch
from shared.config import FlowConfig
from shared.control import ControlPublisher
from shared.control.topic_names import progress_topic
from shared.flow_topics import FlowTopics, OffsetSyncsPlace, offset_syncs_place
from shared.lease import ShardLease


@dataclass(frozen=True, slots=True)
class FlowContext:
    """`flow`'s topic rule and names (`topics`), where its offset syncs live (`offset_syncs`), data-mirror's
    progress topic on its target, and its clients' settings (`flow`)."""

    flow: FlowConfig
    topics: FlowTopics
    offset_syncs: OffsetSyncsPlace
    progress_topic: str

    @classmethod
    def of(cls, flow: FlowConfig) -> FlowContext:
        topics = FlowTopics.for_flow(flow)
        return cls(flow, topics, offset_syncs_place(flow, topics.policy), progress_topic(flow.source))

    @property
    def name(self) -> str:
        """`source->target`."""
        return self.flow.name

    @property
    def internal_replication_factor(self) -> int:
        """The replication factor of Strait's own topics on the target (control, status, leases): internal topics
        like the checkpoints topic, they take its setting, whichever service creates them first."""
        return self.flow.settings.checkpoints_topic_replication_factor

    def publisher(self) -> ControlPublisher:
        """A publisher of control events and statuses on the flow's target."""
        return ControlPublisher(
            self.flow.target_producer_props(),
            replication_factor=self.internal_replication_factor,
            cluster=self.flow.target,
        )

    def lease(self, service: str, *, instance_id: str, shards: int = 1) -> ShardLease:
        """`service`'s lease on this flow: membership of the flow's lease group on its target, `shards` shards."""
        return ShardLease(
            self.flow.target_consumer_props(),
            group_id=self.topics.lease_group(service),
            topic=self.topics.lease_topic(service),
            shards=shards,
            replication_factor=self.internal_replication_factor,
            instance_id=instance_id,
        )

    def watch(self) -> ClusterWatch:
        """A watch over the flow's two clusters (for the status: which of them stopped answering)."""
        return ClusterWatch.for_flows([self.flow])
