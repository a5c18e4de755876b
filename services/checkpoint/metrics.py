"""checkpoint's Prometheus metrics; Strait's own are per flow, never per group or partition (MM2's names, which
are per group-partition as MM2's are, come from `mm2_metric_names`)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from services.checkpoint.mm2_metric_names import CheckpointLatencies

PREFIX = "strait_checkpoint"
# MM2's checkpoint-latency-ms per group-partition would be 10,000 groups x partitions series; a histogram
# per flow keeps the distribution at a fixed cost.
LATENCY_BUCKETS_MS = (5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000)


class CheckpointMetrics:
    """Latency, groups and partitions checkpointed, translation misses, group offset sync, shards."""

    def __init__(self, registry: CollectorRegistry, *, mm2_names: bool = False) -> None:
        self.mm2_latencies: CheckpointLatencies | None = None  # per group-partition, MM2's names (opt-out)
        if mm2_names:
            self.mm2_latencies = CheckpointLatencies()
            registry.register(self.mm2_latencies)
        self.latency_ms = Histogram(
            f"{PREFIX}_latency_ms",
            "MM2's checkpoint-latency-ms: from reading a group's offsets on the source to the checkpoint's ack",
            ["flow"],
            buckets=LATENCY_BUCKETS_MS,
            registry=registry,
        )
        self.commit_latency_ms = Histogram(
            f"{PREFIX}_commit_latency_ms",
            "from a group's offset commit on the source (its commit timestamp) to the checkpoint's ack; streamed only",
            ["flow"],
            buckets=LATENCY_BUCKETS_MS,
            registry=registry,
        )
        self.streamed_records = Counter(
            f"{PREFIX}_consumer_offsets_records",
            "records of the source's __consumer_offsets read, by kind (commit, other: group metadata and newer "
            "record types, skipped; invalid)",
            ["flow", "kind"],
            registry=registry,
        )
        self.groups_behind = Gauge(
            f"{PREFIX}_groups_behind",
            "groups whose checkpoint stands for an older commit than their last (streamed only)",
            ["flow"],
            registry=registry,
        )
        self.group_rpo_seconds = Gauge(
            f"{PREFIX}_group_rpo_max_seconds",
            "how much older than its last commit the most-behind group's checkpoint is: what a failover now "
            "would make it read again, in seconds (streamed only)",
            ["flow"],
            registry=registry,
        )
        self.groups = Gauge(
            f"{PREFIX}_groups",
            "consumer groups this instance checkpoints (owned, passing the group filter, on replicated topics)",
            ["flow"],
            registry=registry,
        )
        self.partitions = Gauge(
            f"{PREFIX}_partitions",
            "group-partitions of this instance's groups that have a checkpoint",
            ["flow"],
            registry=registry,
        )
        self.checkpoints = Counter(
            f"{PREFIX}_records", "checkpoint records written to the checkpoints topic", ["flow"], registry=registry
        )
        self.misses = Counter(
            f"{PREFIX}_translation_misses",
            "committed offsets on replicated topics with no usable offset sync (no checkpoint emitted)",
            ["flow"],
            registry=registry,
        )
        self.rounds = Counter(f"{PREFIX}_rounds", "checkpoint rounds run", ["flow"], registry=registry)
        self.round_seconds = Histogram(
            f"{PREFIX}_round_seconds",
            "duration of one checkpoint round (read offsets, translate, write)",
            ["flow"],
            registry=registry,
        )
        self.errors = Counter(f"{PREFIX}_errors", "failed operations by kind", ["flow", "operation"], registry=registry)
        self.groups_skipped_active = Gauge(
            f"{PREFIX}_groups_skipped_active",
            "target groups with members, left alone by group offset sync",
            ["flow"],
            registry=registry,
        )
        self.group_offsets_synced = Counter(
            f"{PREFIX}_group_offsets_synced",
            "target group partitions moved forward by group offset sync",
            ["flow"],
            registry=registry,
        )
        self.owned_shards = Gauge(
            f"{PREFIX}_owned_shards", "group shards this instance owns", ["flow"], registry=registry
        )
