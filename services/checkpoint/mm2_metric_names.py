"""checkpoint's latency also under MM2's names, so dashboards and alerts built for MM2's checkpoint connector see it.

MM2 reports `checkpoint-latency-ms` and its `-min`, `-max` and `-avg` as JMX attributes of
`kafka.connect.mirror:type=MirrorCheckpointConnector,source=..,target=..,group=..,topic=..,partition=..` (the topic
is the remote one, where the checkpoint points); Strimzi's JMX exporter rules name them
`kafka_connect_mirror_mirrorcheckpointconnector_<attribute>`. Like MM2's metrics (two samples of 30 s), min, max
and average cover the last 30 to 60 seconds; the plain value is the latest checkpoint's. One series per
group-partition, as MM2 has: Strait's own `strait_checkpoint_latency_ms` is one histogram per flow. Off with
STRAIT_MM2_METRIC_NAMES=false.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

PREFIX = "kafka_connect_mirror_mirrorcheckpointconnector_"
LABELS = ["source", "target", "group", "topic", "partition"]
ATTRIBUTES = (
    "checkpoint_latency_ms",
    "checkpoint_latency_ms_min",
    "checkpoint_latency_ms_max",
    "checkpoint_latency_ms_avg",
)
SAMPLE_WINDOW_S = 30.0  # Kafka's metrics.sample.window.ms default; two samples are kept (metrics.num.samples)

_Key = tuple[str, str, str, str, int]  # source, target, group, remote topic, partition


@dataclass
class _Sample:
    started: float
    low: float = float("inf")
    high: float = float("-inf")
    total: float = 0.0
    count: int = 0

    def add(self, value: float) -> None:
        self.low, self.high = min(self.low, value), max(self.high, value)
        self.total += value
        self.count += 1


@dataclass
class _Latency:
    last: float
    samples: list[_Sample] = field(default_factory=list)  # the current sample last; at most two


class CheckpointLatencies(Collector):
    """The latency of each group-partition's checkpoints, exported as MM2's four attributes."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._latencies: dict[_Key, _Latency] = {}

    def observe(self, source: str, target: str, group: str, topic: str, partition: int, latency_ms: float) -> None:
        """One checkpoint of `group` for remote `topic`-`partition`, acknowledged `latency_ms` after its read."""
        now = self._clock()
        key = (source, target, group, topic, partition)
        latency = self._latencies.get(key)
        if latency is None:
            latency = self._latencies[key] = _Latency(latency_ms)
        latency.last = latency_ms
        if not latency.samples or now - latency.samples[-1].started >= SAMPLE_WINDOW_S:
            latency.samples = [*latency.samples[-1:], _Sample(now)]
        latency.samples[-1].add(latency_ms)

    def collect(self) -> Iterator[Metric]:
        now = self._clock()
        families = {
            attribute: GaugeMetricFamily(
                PREFIX + attribute,
                f"MM2's {attribute.replace('_', '-')} (Strait: strait_checkpoint_latency_ms)",
                labels=LABELS,
            )
            for attribute in ATTRIBUTES
        }
        for (source, target, group, topic, partition), latency in list(self._latencies.items()):
            labels = [source, target, group, topic, str(partition)]
            families["checkpoint_latency_ms"].add_metric(labels, latency.last)
            recent = [s for s in latency.samples if now - s.started < 2 * SAMPLE_WINDOW_S]
            count = sum(sample.count for sample in recent)
            if not count:
                continue  # no checkpoint for a minute: MM2 leaves min/max/avg without a value (NaN) then
            families["checkpoint_latency_ms_min"].add_metric(labels, min(sample.low for sample in recent))
            families["checkpoint_latency_ms_max"].add_metric(labels, max(sample.high for sample in recent))
            families["checkpoint_latency_ms_avg"].add_metric(labels, sum(s.total for s in recent) / count)
        yield from families.values()
