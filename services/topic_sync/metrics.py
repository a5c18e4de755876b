"""topic-sync's Prometheus metrics (labels: flow), registered on the process's registry."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge

from shared.leader_loop import LeaderMetrics

PREFIX = "strait_topic_sync"


class TopicSyncMetrics:
    """Topics created, partitions added, config properties changed, announced topics; plus the leader set."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.common = LeaderMetrics.create(registry, PREFIX)
        self.topics_created = Counter(
            f"{PREFIX}_topics_created", "remote topics created on the target", ["flow"], registry=registry
        )
        self.partitions_added = Counter(
            f"{PREFIX}_partitions_added", "partitions added to remote topics", ["flow"], registry=registry
        )
        self.configs_changed = Counter(
            f"{PREFIX}_configs_changed",
            "remote topic config properties set or reset to follow the source",
            ["flow"],
            registry=registry,
        )
        self.remote_topics = Gauge(
            f"{PREFIX}_remote_topics", "remote topics last announced as ready", ["flow"], registry=registry
        )
        self.announcements = Counter(
            f"{PREFIX}_announcements", "topics-changed events published", ["flow"], registry=registry
        )
