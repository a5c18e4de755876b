"""MirrorClient's answers (upstream clusters, replication hops, heartbeat, checkpoint and remote topics),
computed from one cluster's topic names with the replication policy."""

from __future__ import annotations

from collections.abc import Iterable

from shared.replication_policy import ReplicationPolicy


def all_sources(policy: ReplicationPolicy, topic: str) -> set[str]:
    """Every cluster in `topic`'s chain of sources (stops at a repeat, for policies that allow cycles)."""
    sources: set[str] = set()
    source = policy.topic_source(topic)
    while source is not None and source not in sources:
        sources.add(source)
        upstream = policy.upstream_topic(topic)
        if upstream is None:
            break
        topic = upstream
        source = policy.topic_source(topic)
    return sources


def hops_for_topic(policy: ReplicationPolicy, topic: str, upstream_alias: str) -> int:
    """Hops from `upstream_alias` along `topic`'s chain of sources, or -1 if it is not in the chain."""
    hops = 0
    visited: set[str] = set()
    while True:
        hops += 1
        source = policy.topic_source(topic)
        if source is None or source in visited:
            return -1
        if source == upstream_alias:
            return hops
        visited.add(source)
        upstream = policy.upstream_topic(topic)
        if upstream is None:
            return -1
        topic = upstream


def heartbeat_topics(policy: ReplicationPolicy, topics: Iterable[str]) -> list[str]:
    """The heartbeats topic and its replicas among `topics`, sorted."""
    return sorted(t for t in topics if policy.is_heartbeats_topic(t))


def checkpoint_topics(policy: ReplicationPolicy, topics: Iterable[str]) -> list[str]:
    """Checkpoints topics among `topics`, sorted."""
    return sorted(t for t in topics if policy.is_checkpoints_topic(t))


def upstream_clusters(policy: ReplicationPolicy, topics: Iterable[str]) -> list[str]:
    """Clusters whose heartbeats reach this one, any number of hops away, sorted."""
    return sorted({source for t in heartbeat_topics(policy, topics) for source in all_sources(policy, t)})


def replication_hops(policy: ReplicationPolicy, topics: Iterable[str], upstream_alias: str) -> int:
    """Fewest hops from `upstream_alias` over the heartbeat topics, or -1 if it is unreachable."""
    hops = [hops_for_topic(policy, t, upstream_alias) for t in heartbeat_topics(policy, topics)]
    found = [h for h in hops if h != -1]
    return min(found) if found else -1


def remote_topics(policy: ReplicationPolicy, topics: Iterable[str], source: str | None = None) -> list[str]:
    """Replicated topics (not internal, with a source), optionally only those directly from `source`, sorted."""
    remote = (t for t in topics if not policy.is_internal_topic(t) and policy.topic_source(t) is not None)
    return sorted(t for t in remote if source is None or policy.topic_source(t) == source)
