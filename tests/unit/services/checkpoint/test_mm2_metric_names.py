"""checkpoint-latency-ms under MM2's (Strimzi's) names: the latest value, and min / max / average over MM2's two
30-second samples, per group and remote topic-partition."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from services.checkpoint.mm2_metric_names import CheckpointLatencies

NAME = "kafka_connect_mirror_mirrorcheckpointconnector_checkpoint_latency_ms"
LABELS = {"source": "A", "target": "B", "group": "billing", "topic": "A.orders", "partition": "3"}


class _Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def _values(registry: CollectorRegistry, labels: dict[str, str] = LABELS) -> tuple[float | None, ...]:
    return tuple(registry.get_sample_value(NAME + suffix, labels) for suffix in ("", "_min", "_max", "_avg"))


def test_each_group_partition_has_its_latest_latency_and_min_max_average_over_the_last_minute() -> None:
    clock = _Clock()
    latencies = CheckpointLatencies(clock)
    registry = CollectorRegistry()
    registry.register(latencies)
    for latency in (40.0, 10.0, 70.0):
        latencies.observe("A", "B", "billing", "A.orders", 3, latency)
    latencies.observe("A", "B", "audit", "A.orders", 3, 5.0)
    assert _values(registry) == (70.0, 10.0, 70.0, 40.0)
    assert _values(registry, {**LABELS, "group": "audit"}) == (5.0, 5.0, 5.0, 5.0)

    clock.now += 35  # a second sample: the first still counts
    latencies.observe("A", "B", "billing", "A.orders", 3, 100.0)
    assert _values(registry) == (100.0, 10.0, 100.0, 55.0)

    clock.now += 30  # a third: the first is dropped
    latencies.observe("A", "B", "billing", "A.orders", 3, 20.0)
    assert _values(registry) == (20.0, 20.0, 100.0, 60.0)

    clock.now += 120  # no checkpoint for two minutes: the latest stays, min / max / average have no value
    assert _values(registry) == (20.0, None, None, None)
