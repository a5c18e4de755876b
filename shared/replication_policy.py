"""Topic naming: the only place that builds or parses replicated and internal topic names (MM2 policies)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from shared.errors import ConfigError
from shared.filters.topic import TopicFilter

HEARTBEATS_TOPIC_DEFAULT = "heartbeats"
SEPARATOR_DEFAULT = "."


@runtime_checkable
class ReplicationPolicy(Protocol):
    """How remote topic names are formed and read back (MM2's ReplicationPolicy, snake_case)."""

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        """Name on the target of `topic` replicated from cluster `source_alias`."""
        ...

    def topic_source(self, topic: str) -> str | None:
        """Alias of the cluster `topic` was replicated from, or None if it is not a remote topic."""
        ...

    def upstream_topic(self, topic: str) -> str | None:
        """Name of `topic` one hop upstream (itself possibly remote), or None if it is not remote."""
        ...

    def original_topic(self, topic: str) -> str:
        """Name of `topic` on the cluster where it was first produced (all hops stripped)."""
        ...

    def heartbeats_topic(self) -> str:
        """Name of the heartbeats topic on every cluster."""
        ...

    def offset_syncs_topic(self, cluster_alias: str) -> str:
        """Name of the offset-syncs topic that carries syncs for flows involving `cluster_alias`."""
        ...

    def checkpoints_topic(self, cluster_alias: str) -> str:
        """Name on the target of the checkpoints topic for source cluster `cluster_alias`."""
        ...

    def is_heartbeats_topic(self, topic: str) -> bool:
        """True for the heartbeats topic and its replicas (`A.heartbeats`, `B.A.heartbeats`)."""
        ...

    def is_checkpoints_topic(self, topic: str) -> bool:
        """True for a checkpoints topic."""
        ...

    def is_mm2_internal_topic(self, topic: str) -> bool:
        """True for MM2's own internal topics (offset syncs, checkpoints, Connect's MM2 topics)."""
        ...

    def is_internal_topic(self, topic: str) -> bool:
        """True for any topic that must never be replicated as data (Kafka, Connect or MM2 internal)."""
        ...


def checkpoint_topic_name(policy: ReplicationPolicy, source_alias: str, target_alias: str, topic: str) -> str:
    """The name on the target that a checkpoint for source topic `topic` carries.

    A topic that came from the target itself (fail-back, `B.orders` seen on A in flow A->B) gets its
    original name back; any other topic gets the remote name (`A.orders`, `A.C.orders`).
    """
    if policy.topic_source(topic) == target_alias:
        return policy.original_topic(topic)
    return policy.format_remote_topic(source_alias, topic)


def _java_split(text: str, separator: str) -> list[str]:
    """`text` split on a literal separator with Java's Pattern.split rules: trailing empty parts dropped."""
    parts = text.split(separator)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


class DefaultReplicationPolicy:
    """Remote topics are `<source><separator><topic>` (MM2's DefaultReplicationPolicy).

    Internal topics use the separator too unless `internal_topic_separator_enabled` is False, in
    which case they keep `.` (`mm2-offset-syncs.B.internal`, `A.checkpoints.internal`).
    """

    def __init__(
        self,
        separator: str = SEPARATOR_DEFAULT,
        internal_topic_separator_enabled: bool = True,
        heartbeats_topic_name: str = HEARTBEATS_TOPIC_DEFAULT,
    ) -> None:
        if not separator:
            raise ConfigError(
                "replication.policy.separator must not be empty", key="replication.policy.separator", value=""
            )
        self.separator = separator
        self.internal_topic_separator_enabled = internal_topic_separator_enabled
        self._heartbeats_topic = heartbeats_topic_name
        internal_separator = separator if internal_topic_separator_enabled else "."
        self._internal_separator = internal_separator
        self._internal_suffix = f"{internal_separator}internal"
        self._checkpoints_suffix = f"{internal_separator}checkpoints{self._internal_suffix}"

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(separator={self.separator!r}, "
            f"internal_topic_separator_enabled={self.internal_topic_separator_enabled!r})"
        )

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        """`<source_alias><separator><topic>`."""
        return f"{source_alias}{self.separator}{topic}"

    def topic_source(self, topic: str) -> str | None:
        """First separator-delimited part when there are at least two (Java split: `a.` is not remote)."""
        parts = _java_split(topic, self.separator)
        if len(parts) < 2:
            return None
        return parts[0]

    def upstream_topic(self, topic: str) -> str | None:
        """`topic` with its first `<source><separator>` removed, or None if it is not remote."""
        source = self.topic_source(topic)
        if source is None:
            return None
        return topic[len(source) + len(self.separator) :]

    def original_topic(self, topic: str) -> str:
        """Strip hops until the name stops changing or is no longer remote."""
        current = topic
        while True:
            upstream = self.upstream_topic(current)
            if upstream is None or upstream == current:
                return current
            current = upstream

    def heartbeats_topic(self) -> str:
        """`heartbeats` by default; never affected by the separator."""
        return self._heartbeats_topic

    def offset_syncs_topic(self, cluster_alias: str) -> str:
        """`mm2-offset-syncs<sep><alias><sep>internal`."""
        return f"mm2-offset-syncs{self._internal_separator}{cluster_alias}{self._internal_suffix}"

    def checkpoints_topic(self, cluster_alias: str) -> str:
        """`<alias><sep>checkpoints<sep>internal`."""
        return f"{cluster_alias}{self._checkpoints_suffix}"

    def is_heartbeats_topic(self, topic: str) -> bool:
        """True when the original topic of `topic` is the heartbeats topic."""
        return self.heartbeats_topic() == self.original_topic(topic)

    def is_checkpoints_topic(self, topic: str) -> bool:
        """True when `topic` ends with `<sep>checkpoints<sep>internal`."""
        return topic.endswith(self._checkpoints_suffix)

    def is_mm2_internal_topic(self, topic: str) -> bool:
        """True when `topic` ends with `<sep>internal`."""
        return topic.endswith(self._internal_suffix)

    def is_internal_topic(self, topic: str) -> bool:
        """MM2 internal, or starts with `__` or `.`, or ends with `-internal` or `.internal`."""
        kafka_internal = topic.startswith(("__", "."))
        connect_internal = topic.endswith(("-internal", ".internal"))
        return self.is_mm2_internal_topic(topic) or kafka_internal or connect_internal


class IdentityReplicationPolicy(DefaultReplicationPolicy):
    """Remote topics keep their names (MM2's IdentityReplicationPolicy); heartbeats are still prefixed.

    Any topic may be remote, so `topic_source` is `source_cluster_alias` (None if not given) and cycles
    cannot be detected by name, except for heartbeats, which follow DefaultReplicationPolicy.
    """

    def __init__(
        self,
        source_cluster_alias: str | None = None,
        separator: str = SEPARATOR_DEFAULT,
        internal_topic_separator_enabled: bool = True,
        heartbeats_topic_name: str = HEARTBEATS_TOPIC_DEFAULT,
    ) -> None:
        super().__init__(separator, internal_topic_separator_enabled, heartbeats_topic_name)
        self.source_cluster_alias = source_cluster_alias

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(source_cluster_alias={self.source_cluster_alias!r}, "
            f"separator={self.separator!r}, "
            f"internal_topic_separator_enabled={self.internal_topic_separator_enabled!r})"
        )

    def _looks_like_heartbeat(self, topic: str) -> bool:
        # MM2 tests the suffix only, so `myheartbeats` is handled as a heartbeat name too.
        return topic.endswith(self.heartbeats_topic())

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        """`topic` unchanged, except heartbeats which become `<source_alias><sep>heartbeats`."""
        if self._looks_like_heartbeat(topic):
            return super().format_remote_topic(source_alias, topic)
        return topic

    def topic_source(self, topic: str) -> str | None:
        """The configured source alias; for heartbeat names, the Default policy's answer."""
        if self._looks_like_heartbeat(topic):
            return super().topic_source(topic)
        return self.source_cluster_alias

    def upstream_topic(self, topic: str) -> str | None:
        """`topic` itself; for heartbeat names, the Default policy's answer."""
        if self._looks_like_heartbeat(topic):
            return super().upstream_topic(topic)
        return topic


_POLICY_KINDS = {
    "default": "default",
    "defaultreplicationpolicy": "default",
    "org.apache.kafka.connect.mirror.defaultreplicationpolicy": "default",
    "identity": "identity",
    "identityreplicationpolicy": "identity",
    "org.apache.kafka.connect.mirror.identityreplicationpolicy": "identity",
}


def replication_policy_for(
    kind: str,
    *,
    separator: str = SEPARATOR_DEFAULT,
    internal_topic_separator_enabled: bool = True,
    source_cluster_alias: str | None = None,
) -> ReplicationPolicy:
    """Build the policy named by `kind`: "default" or "identity" (MM2's class names are accepted too).

    `source_cluster_alias` only matters for identity; pass the flow's source alias, as MM2's connectors do.
    """
    resolved = _POLICY_KINDS.get(kind.strip().lower())
    if resolved == "default":
        return DefaultReplicationPolicy(separator, internal_topic_separator_enabled)
    if resolved == "identity":
        return IdentityReplicationPolicy(source_cluster_alias, separator, internal_topic_separator_enabled)
    raise ConfigError(
        f"replication.policy.class must be 'default' or 'identity', got {kind!r}",
        key="replication.policy.class",
        value=kind,
    )


def is_cycle(policy: ReplicationPolicy, topic: str, target_alias: str) -> bool:
    """True if some hop of `topic`'s source chain is `target_alias` (it would return where it came from).

    Stops when a topic is not remote or its upstream name equals itself (identity policies).
    """
    current = topic
    while True:
        source = policy.topic_source(current)
        if source is None:
            return False
        if source == target_alias:
            return True
        upstream = policy.upstream_topic(current)
        if upstream is None or upstream == current:
            return False
        current = upstream


def should_replicate_topic(
    policy: ReplicationPolicy,
    topic: str,
    *,
    target_alias: str,
    topic_filter: TopicFilter,
    heartbeats_replication_enabled: bool = True,
) -> bool:
    """MM2's full topic rule for a flow to `target_alias`.

    The filter accepts it (or it is a heartbeats topic and `heartbeats.replication.enabled`), it is not
    internal, and replicating it would not be a cycle.
    """
    wanted = topic_filter.should_replicate_topic(topic) or (
        heartbeats_replication_enabled and policy.is_heartbeats_topic(topic)
    )
    return wanted and not policy.is_internal_topic(topic) and not is_cycle(policy, topic, target_alias)


def mm2_connect_offsets_topic(source_alias: str) -> str:
    """Where dedicated-mode MM2 keeps its copy positions for flows from `source_alias` (on the target cluster)."""
    return f"mm2-offsets.{source_alias}.internal"


def mm2_worker_group(source_alias: str) -> str:
    """The Connect worker group of dedicated-mode MM2 for flows from `source_alias` (on the target cluster)."""
    return f"{source_alias}-mm2"
