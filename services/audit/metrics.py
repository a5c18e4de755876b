"""audit's Prometheus metrics (labels: flow; the verified position also topic and partition)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge

from shared.leader_loop import LeaderMetrics

PREFIX = "strait_audit"


class AuditMetrics:
    """What the audit verified and found; how far behind the mirror it is."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.common = LeaderMetrics.create(registry, PREFIX)

        def counter(name: str, text: str) -> Counter:
            return Counter(f"{PREFIX}_{name}", text, ["flow"], registry=registry)

        self.verified = counter("records_verified", "source records found on the target unchanged")
        self.missing = counter("missing", "source records the mirror had copied that the target lacks")
        self.altered = counter("altered", "target records that differ from the source record in their place")
        self.duplicates = counter("duplicates", "second copies of verified records (at-least-once replays)")
        self.unexpected = counter("unexpected", "target records that match no source record")
        self.bytes_read = counter("bytes_read", "bytes of keys, values and headers read, both clusters")
        self.dropped = counter("records_dropped", "source records the flow's transforms drop, verified absent")
        self.returned = counter(
            "records_returned", "source records not copied because they came from the target, verified absent"
        )
        self.skipped = Counter(
            f"{PREFIX}_skipped_records",
            "source records not verified: sampled_out; expired (gone from the source before the audit read them); "
            "unplaced (no offset sync says where their copy starts); transform_failed (a transform of the flow "
            "failed on it in the audit)",
            ["flow", "reason"],
            registry=registry,
        )
        self.lag = Gauge(
            f"{PREFIX}_lag_records", "records the mirror has copied that the audit has not yet verified", ["flow"],
            registry=registry,
        )  # fmt: skip
        self.position = Gauge(
            f"{PREFIX}_verified_offset",
            "the source offset up to which the partition's copy is verified (exclusive)",
            ["flow", "topic", "partition"],
            registry=registry,
        )
