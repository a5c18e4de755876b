"""data-mirror's per-partition metrics also under MM2's names, so dashboards and alerts built for MM2 see Strait.

MM2 reports them as JMX attributes of `kafka.connect.mirror:type=MirrorSourceConnector,target=..,topic=..,
partition=..`; Strimzi's JMX exporter rules (and most dashboards built on them) name each
`kafka_connect_mirror_mirrorsourceconnector_<attribute>` with labels target, topic (the remote topic) and
partition. This collector reads Strait's own metrics at scrape time and gives the same values those names, plus a
`source` label, so nothing is counted twice. MM2's `-min` attributes have no Strait counterpart and are left out;
Strait's `record_age_ms` and `replication_latency_ms` are averages over the commit interval, so they stand for both
MM2's plain and `-avg` attributes. Off with STRAIT_MM2_METRIC_NAMES=false (thousands of partitions double the
series).
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from services.data_mirror.metrics import MirrorMetrics

PREFIX = "kafka_connect_mirror_mirrorsourceconnector_"
# MM2's attribute (as the exporter spells it) -> the Strait sample that holds the same value
SOURCE_ATTRIBUTES = {
    "record_count": "strait_mirror_record_count_total",
    "byte_count": "strait_mirror_byte_count_total",
    "record_rate": "strait_mirror_record_rate",
    "byte_rate": "strait_mirror_byte_rate",
    "record_age_ms": "strait_mirror_record_age_ms",
    "record_age_ms_avg": "strait_mirror_record_age_ms",
    "record_age_ms_max": "strait_mirror_record_age_ms_max",
    "replication_latency_ms": "strait_mirror_replication_latency_ms",
    "replication_latency_ms_avg": "strait_mirror_replication_latency_ms",
    "replication_latency_ms_max": "strait_mirror_replication_latency_ms_max",
}
LABELS = ["source", "target", "topic", "partition"]


class Mm2SourceMetricNames(Collector):
    """MM2-named gauges over data-mirror's per-partition metrics (see the module docstring)."""

    def __init__(self, metrics: MirrorMetrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[Metric]:
        m = self._metrics
        wanted = set(SOURCE_ATTRIBUTES.values())
        found: dict[str, list[tuple[list[str], float]]] = {}
        for metric in (
            m.record_count,
            m.byte_count,
            m.record_rate,
            m.byte_rate,
            m.record_age_ms,
            m.record_age_ms_max,
            m.replication_latency_ms,
            m.replication_latency_ms_max,
        ):
            for family in metric.collect():
                for sample in family.samples:
                    if sample.name in wanted:
                        source, _, target = sample.labels["flow"].partition("->")
                        labels = [source, target, sample.labels["topic"], sample.labels["partition"]]
                        found.setdefault(sample.name, []).append((labels, sample.value))
        for attribute, strait_name in SOURCE_ATTRIBUTES.items():
            family = GaugeMetricFamily(
                PREFIX + attribute, f"MM2's {attribute.replace('_', '-')} (Strait: {strait_name})", labels=LABELS
            )
            for labels, value in found.get(strait_name, []):
                family.add_metric(labels, value)
            yield family
