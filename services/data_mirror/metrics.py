"""data-mirror's Prometheus metrics: MM2's per-partition names and meanings, plus records behind."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

PARTITION = ("flow", "topic", "partition")  # topic: the remote topic, as MM2 labels its metrics


class MirrorMetrics:
    """All metrics of one driver process."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.record_count = Counter(
            "strait_mirror_record_count", "records copied (MM2 record-count)", PARTITION, registry=registry
        )
        self.byte_count = Counter(
            "strait_mirror_byte_count", "record value bytes copied (MM2 byte-count)", PARTITION, registry=registry
        )
        self.record_rate = Gauge(
            "strait_mirror_record_rate", "records/s over the last epoch (MM2 record-rate)", PARTITION, registry=registry
        )
        self.byte_rate = Gauge(
            "strait_mirror_byte_rate", "value bytes/s over the last epoch (MM2 byte-rate)", PARTITION, registry=registry
        )
        self.record_age_ms = Gauge(
            "strait_mirror_record_age_ms",
            "avg now - record timestamp at poll (MM2 record-age-ms)",
            PARTITION,
            registry=registry,
        )
        self.record_age_ms_max = Gauge(
            "strait_mirror_record_age_ms_max", "max record age at poll in the last epoch", PARTITION, registry=registry
        )
        self.replication_latency_ms = Gauge(
            "strait_mirror_replication_latency_ms",
            "avg now - record timestamp at target ack (MM2 replication-latency-ms)",
            PARTITION,
            registry=registry,
        )
        self.replication_latency_ms_max = Gauge(
            "strait_mirror_replication_latency_ms_max",
            "max replication latency in the last epoch",
            PARTITION,
            registry=registry,
        )
        self.records_behind = Gauge(
            "strait_mirror_records_behind", "source end offset minus next offset to copy", PARTITION, registry=registry
        )
        self.partition_blocked = Gauge(
            "strait_mirror_partition_blocked",
            "1 while the target refuses a record of this partition",
            PARTITION,
            registry=registry,
        )
        self.records_expired = Counter(
            "strait_mirror_records_expired",
            "records deleted by source retention before they could be copied",
            PARTITION,
            registry=registry,
        )
        self.offset_syncs = Counter("strait_mirror_offset_syncs", "offset syncs written", ("flow",), registry=registry)
        self.errors = Counter("strait_mirror_errors", "errors by kind", ("flow", "kind"), registry=registry)
        self.epochs = Counter("strait_mirror_epochs", "epochs run", registry=registry)
        self.epoch_seconds = Histogram(
            "strait_mirror_epoch_seconds",
            "wall time of an epoch",
            registry=registry,
            buckets=(0.25, 0.5, 1, 2, 4, 8, 16, 32),
        )
        self.partitions = Gauge("strait_mirror_partitions", "partitions mirrored", ("flow",), registry=registry)
        self.topics_waiting = Gauge(
            "strait_mirror_topics_waiting",
            "source topics whose remote topic does not exist yet",
            ("flow",),
            registry=registry,
        )
