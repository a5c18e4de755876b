"""Dashboards built for MM2 (Strimzi's metric names) see data-mirror's per-partition values, counted once."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from services.data_mirror.metrics import MirrorMetrics
from services.data_mirror.mm2_metric_names import PREFIX, Mm2SourceMetricNames
from shared.metrics_registry import service_registry


def _scrape(registry: CollectorRegistry) -> dict[str, float]:
    samples = {}
    for family in registry.collect():
        for sample in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
            samples[f"{sample.name}{{{labels}}}"] = sample.value
    return samples


def test_each_partition_is_reported_under_mm2s_names_with_the_same_values() -> None:
    registry = CollectorRegistry()
    metrics = MirrorMetrics(registry)
    registry.register(Mm2SourceMetricNames(metrics))
    partition = metrics.partition("A->B", "A.orders", 3)
    partition.record_count.inc(42)
    partition.byte_count.inc(4200)
    partition.replication_latency_ms.set(12.5)
    partition.replication_latency_ms_max.set(80)
    partition.record_age_ms.set(30)
    samples = _scrape(registry)
    where = "{partition=3,source=A,target=B,topic=A.orders}"
    assert samples[f"{PREFIX}record_count{where}"] == 42
    assert samples[f"{PREFIX}byte_count{where}"] == 4200
    assert samples[f"{PREFIX}replication_latency_ms{where}"] == 12.5
    assert samples[f"{PREFIX}replication_latency_ms_avg{where}"] == 12.5
    assert samples[f"{PREFIX}replication_latency_ms_max{where}"] == 80
    assert samples[f"{PREFIX}record_age_ms_avg{where}"] == 30
    strait_where = "{flow=A->B,partition=3,topic=A.orders}"
    assert samples[f"strait_mirror_record_count_total{strait_where}"] == 42, "Strait's own names stay"
    text = generate_latest(registry).decode()
    assert f"# TYPE {PREFIX}record_count gauge" in text, "MM2's record-count is a gauge in the exporter's output"


def test_every_service_registry_has_process_gc_and_build_metrics() -> None:
    samples = _scrape(service_registry("strait-test"))
    names = {key.split("{")[0] for key in samples}
    assert {"process_cpu_seconds_total", "process_resident_memory_bytes", "python_gc_objects_collected_total"} <= names
    assert "python_info" in names
    build = [key for key in samples if key.startswith("strait_build_info")]
    assert len(build) == 1
    assert "service=strait-test" in build[0]
    assert "version=" in build[0]
