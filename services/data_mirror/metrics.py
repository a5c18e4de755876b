"""data-mirror's Prometheus metrics: MM2's per-partition names and meanings, plus records behind."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge

from shared.dr.records import RpoSummary

PARTITION = ("flow", "topic", "partition")  # topic: the remote topic, as MM2 labels its metrics


@dataclass(frozen=True)
class PartitionMetrics:
    """One partition's metric children, looked up once: at thousands of partitions, each commit interval brings
    a progress record per moving partition, and a label look-up per metric per record was the driver's cost."""

    record_count: Any
    byte_count: Any
    record_rate: Any
    byte_rate: Any
    records_forwarded: Any
    record_age_ms: Any
    record_age_ms_max: Any
    replication_latency_ms: Any
    replication_latency_ms_max: Any
    records_behind: Any
    partition_blocked: Any
    records_expired: Any
    records_dropped: Any
    records_returned: Any


class MirrorMetrics:
    """All metrics of one driver process."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._partitions: dict[tuple[str, str, str], PartitionMetrics] = {}
        self.record_count = Counter(
            "strait_mirror_record_count", "records copied (MM2 record-count)", PARTITION, registry=registry
        )
        self.byte_count = Counter(
            "strait_mirror_byte_count", "record value bytes copied (MM2 byte-count)", PARTITION, registry=registry
        )
        self.record_rate = Gauge(
            "strait_mirror_record_rate",
            "records/s over the last commit interval (MM2 record-rate)",
            PARTITION,
            registry=registry,
        )
        self.byte_rate = Gauge(
            "strait_mirror_byte_rate",
            "value bytes/s over the last commit interval (MM2 byte-rate)",
            PARTITION,
            registry=registry,
        )
        self.records_forwarded = Counter(
            "strait_mirror_records_forwarded",
            "of record-count, records whose source batch was forwarded unchanged (the rest were re-encoded)",
            PARTITION,
            registry=registry,
        )
        self.record_age_ms = Gauge(
            "strait_mirror_record_age_ms",
            "avg now - record timestamp at poll (MM2 record-age-ms)",
            PARTITION,
            registry=registry,
        )
        self.record_age_ms_max = Gauge(
            "strait_mirror_record_age_ms_max",
            "max record age at poll in the last commit interval",
            PARTITION,
            registry=registry,
        )
        self.replication_latency_ms = Gauge(
            "strait_mirror_replication_latency_ms",
            "avg now - record timestamp at target ack (MM2 replication-latency-ms)",
            PARTITION,
            registry=registry,
        )
        self.replication_latency_ms_max = Gauge(
            "strait_mirror_replication_latency_ms_max",
            "max replication latency in the last commit interval",
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
        self.records_dropped = Counter(
            "strait_mirror_records_dropped",
            "records the flow's transforms dropped (by configuration: not copied)",
            PARTITION,
            registry=registry,
        )
        self.records_returned = Counter(
            "strait_mirror_records_returned",
            "records not copied because their provenance header names the target: they came from it",
            PARTITION,
            registry=registry,
        )
        self.provenance_ignored = Counter(
            "strait_mirror_provenance_ignored",
            "provenance headers on a topic the header's path does not name (an application forwarded them): not "
            "trusted, the record is copied as an original",
            ("flow",),
            registry=registry,
        )
        self.offset_syncs = Counter("strait_mirror_offset_syncs", "offset syncs written", ("flow",), registry=registry)
        self.errors = Counter("strait_mirror_errors", "errors by kind", ("flow", "kind"), registry=registry)
        self.task_starts = Counter(
            "strait_mirror_task_starts",
            "long-lived copy tasks started (one Spark job each): only when the assignment changes or a task failed",
            ("flow",),
            registry=registry,
        )
        self.task_failures = Counter(
            "strait_mirror_task_failures", "copy tasks that ended with an error", ("flow",), registry=registry
        )
        self.tasks_running = Gauge("strait_mirror_tasks_running", "copy tasks running", ("flow",), registry=registry)
        self.offset_syncs_failed = Counter(
            "strait_mirror_offset_syncs_failed", "offset syncs the broker did not take", ("flow",), registry=registry
        )
        self.source_read_errors = Counter(
            "strait_mirror_source_read_errors",
            "retriable errors the copy tasks' source consumers reported (retried; a rising count: a struggling source)",
            ("flow",),
            registry=registry,
        )
        self.partitions = Gauge("strait_mirror_partitions", "partitions mirrored", ("flow",), registry=registry)
        self.topics_waiting = Gauge(
            "strait_mirror_topics_waiting",
            "source topics whose remote topic does not exist yet",
            ("flow",),
            registry=registry,
        )

        self.rpo_records = Gauge(
            "strait_mirror_rpo_records",
            "source records not yet on the target: what a failover now would leave behind",
            ("flow",),
            registry=registry,
        )
        self.rpo_seconds = Gauge(
            "strait_mirror_rpo_seconds",
            "age of the oldest source record not yet on the target (0: nothing behind)",
            ("flow",),
            registry=registry,
        )
        self.topic_rpo_records = Gauge(
            "strait_mirror_topic_rpo_records", "records not yet on the target, per source topic", ("flow", "topic"),
            registry=registry,
        )  # fmt: skip
        self.topic_rpo_seconds = Gauge(
            "strait_mirror_topic_rpo_seconds",
            "age of the oldest record not yet on the target, per source topic",
            ("flow", "topic"),
            registry=registry,
        )
        self.rpo_as_of = Gauge(
            "strait_mirror_rpo_as_of_timestamp_seconds",
            "when the RPO figures were last known to be current (the source stopped answering then, if it did)",
            ("flow",),
            registry=registry,
        )

    def observe_rpo(self, flow: str, rpo: RpoSummary) -> None:
        """Set the flow's and its topics' RPO gauges (seconds unknown: left as they were)."""
        self.rpo_records.labels(flow).set(rpo.records)
        if rpo.seconds is not None:
            self.rpo_seconds.labels(flow).set(rpo.seconds)
        if rpo.as_of_ms is not None:
            self.rpo_as_of.labels(flow).set(rpo.as_of_ms / 1000)
        for topic in rpo.topics:
            self.topic_rpo_records.labels(flow, topic.topic).set(topic.records)
            if topic.seconds is not None:
                self.topic_rpo_seconds.labels(flow, topic.topic).set(topic.seconds)

    def partition(self, flow: str, remote_topic: str, partition: int) -> PartitionMetrics:
        """The per-partition metrics of one remote partition (created on first use, then kept)."""
        labels = (flow, remote_topic, str(partition))
        found = self._partitions.get(labels)
        if found is None:
            found = PartitionMetrics(
                *(
                    getattr(self, name).labels(*labels)
                    for name in PartitionMetrics.__dataclass_fields__  # the same names as the metrics above
                )
            )
            self._partitions[labels] = found
        return found
