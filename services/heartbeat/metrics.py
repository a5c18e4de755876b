"""heartbeat's Prometheus metrics (labels: flow, as `source->target`; bounded by the config's flows)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from shared.clock_skew import MAX_AHEAD_MS

LATENCY_BUCKETS_MS = (10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000)


class HeartbeatMetrics:
    """Heartbeats emitted per pair; per watched flow: received, not believed, latency, age of the newest, stalled."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.emitted = Counter(
            "strait_heartbeats_emitted",
            "heartbeats written into `heartbeats` on the pair's target cluster",
            ["flow"],
            registry=registry,
        )
        self.emit_errors = Counter(
            "strait_heartbeat_emit_errors", "heartbeats that could not be written", ["flow"], registry=registry
        )
        self.received = Counter(
            "strait_heartbeats_received",
            "mirrored heartbeats read on the flow's target (<source>.heartbeats)",
            ["flow"],
            registry=registry,
        )
        self.ahead = Counter(
            "strait_heartbeats_ahead_of_clock",
            f"mirrored heartbeats stamped more than {MAX_AHEAD_MS // 1000} s ahead of this clock: not believed",
            ["flow"],
            registry=registry,
        )
        self.latency_ms = Histogram(
            "strait_heartbeat_latency_ms",
            "end-to-end replication latency: time a mirrored heartbeat was read minus its timestamp",
            ["flow"],
            buckets=LATENCY_BUCKETS_MS,
            registry=registry,
        )
        self.last_latency_ms = Gauge(
            "strait_heartbeat_last_latency_ms",
            "end-to-end latency of the last heartbeat read",
            ["flow"],
            registry=registry,
        )
        self.age_ms = Gauge(
            "strait_heartbeat_age_ms",
            "age of the newest mirrored heartbeat (-1 before the first)",
            ["flow"],
            registry=registry,
        )
        self.stalled = Gauge(
            "strait_flow_stalled",
            "1 while mirrored heartbeats of the flow stopped arriving",
            ["flow"],
            registry=registry,
        )
