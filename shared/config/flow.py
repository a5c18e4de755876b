"""`FlowConfig`: one ordered pair of clusters, its settings and the client settings of both sides.

Client settings for a flow's clients, least to most specific: the cluster (`A.*`, then
`A.consumer.*`), the flow (`A->B.consumer.*`, then `A->B.consumer.override.*`), and the flow for one
side (`A->B.source.consumer.*`). `A->B.source.cluster.*` / `A->B.target.cluster.*` replace the
cluster's own keys for this flow. MM2 lets a cluster's `A.consumer.*` beat `A->B.consumer.*`;
Strait lets the narrower scope (the flow) win.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.config.cluster import ClusterConfig
from shared.config.flow_settings import FlowSettings
from shared.config.transforms import TransformSpec

ROLES = ("consumer", "producer", "admin")


@dataclass(frozen=True, slots=True)
class ClientOverrides:
    """Client keys (prefix removed) for each client role. Treat the dicts as read-only."""

    consumer: dict[str, str] = field(default_factory=dict)
    producer: dict[str, str] = field(default_factory=dict)
    admin: dict[str, str] = field(default_factory=dict)

    def for_role(self, role: str) -> dict[str, str]:
        """The overrides of `role` (consumer, producer or admin)."""
        return _pick(role, self.consumer, self.producer, self.admin)


@dataclass(frozen=True, slots=True)
class FlowConfig:
    """Replication from `source` to `target`: MM2 considers every ordered pair; only some are enabled.

    `props` are the flow's effective connector-level properties (`A->B.<key>` over top-level
    `<key>`); `settings` is their typed form. `source_cluster`/`target_cluster` already include the
    flow's `source.cluster.*`/`target.cluster.*` keys. Treat the dicts as read-only.
    """

    source: str
    target: str
    enabled: bool
    settings: FlowSettings
    props: dict[str, str]
    source_cluster: ClusterConfig
    target_cluster: ClusterConfig
    consumer_overrides: dict[str, str] = field(default_factory=dict)
    producer_overrides: dict[str, str] = field(default_factory=dict)
    admin_overrides: dict[str, str] = field(default_factory=dict)
    source_overrides: ClientOverrides = field(default_factory=ClientOverrides)
    target_overrides: ClientOverrides = field(default_factory=ClientOverrides)
    transforms: tuple[TransformSpec, ...] = ()  # Connect's single message transforms, applied in order

    @property
    def name(self) -> str:
        """`source->target`, as MM2 spells a flow."""
        return f"{self.source}->{self.target}"

    @property
    def emits_heartbeats(self) -> bool:
        """MM2 emits heartbeats for a pair even when its replication is disabled, unless turned off."""
        return self.settings.emit_heartbeats_enabled

    def source_consumer_props(self) -> dict[str, str]:
        """Consumer on the source (records, offset syncs when stored there, group offsets)."""
        props = self._client("consumer", self.source_cluster.consumer_props(), self.source_overrides)
        return self._consumer_defaults(props)

    def target_consumer_props(self) -> dict[str, str]:
        """Consumer on the target (checkpoints, offset syncs when stored there)."""
        return self._consumer_defaults(
            self._client("consumer", self.target_cluster.consumer_props(), self.target_overrides)
        )

    def source_producer_props(self) -> dict[str, str]:
        """Producer on the source (offset syncs when stored there; heartbeats of the reverse pair)."""
        return self._client("producer", self.source_cluster.producer_props(), self.source_overrides)

    def target_producer_props(self) -> dict[str, str]:
        """Producer on the target (remote records, checkpoints, heartbeats)."""
        return self._client("producer", self.target_cluster.producer_props(), self.target_overrides)

    def source_admin_props(self) -> dict[str, str]:
        """Admin client on the source."""
        return self._client("admin", self.source_cluster.admin_props(), self.source_overrides)

    def target_admin_props(self) -> dict[str, str]:
        """Admin client on the target."""
        return self._client("admin", self.target_cluster.admin_props(), self.target_overrides)

    def overrides_for(self, role: str) -> dict[str, str]:
        """The flow-wide overrides of `role` (consumer, producer or admin), for both sides."""
        return _pick(role, self.consumer_overrides, self.producer_overrides, self.admin_overrides)

    def _client(self, role: str, base: dict[str, str], side: ClientOverrides) -> dict[str, str]:
        return {**base, **self.overrides_for(role), **side.for_role(role)}

    def _consumer_defaults(self, props: dict[str, str]) -> dict[str, str]:
        # As MM2: positions are tracked by the mirror, never auto-committed; a new partition starts
        # at its beginning. Unlike MM2 (Java's read_uncommitted), records of aborted transactions are
        # never copied unless the flow sets isolation.level=read_uncommitted: a consumer on the target
        # must not process data its producer rolled back.
        props["enable.auto.commit"] = "false"
        props.setdefault("auto.offset.reset", "earliest")
        props.setdefault("isolation.level", "read_committed")
        return props


def _pick(role: str, consumer: dict[str, str], producer: dict[str, str], admin: dict[str, str]) -> dict[str, str]:
    if role == "consumer":
        return consumer
    if role == "producer":
        return producer
    if role == "admin":
        return admin
    raise ValueError(f"unknown client role {role!r}; expected one of {', '.join(ROLES)}")
