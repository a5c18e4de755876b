"""The pre-filled source topics the throughput section mirrors, and how they are filled."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from benchmarks.console import say
from benchmarks.contenders import PRODUCER
from benchmarks.lab import EndOffsets, Lab, delete_topics, make_topics
from benchmarks.producer_perf import PerfResult, run_perf
from shared.localkafka import KafkaCluster

PARTITIONS = 12


@dataclass(frozen=True)
class Dataset:
    """One source topic: `records` records of `record_size` value bytes (no key) over `partitions` partitions,
    written with `compression` (the producer's compression.type)."""

    label: str
    topic: str
    record_size: int
    records: int
    compression: str = "none"
    partitions: int = PARTITIONS

    @property
    def producer(self) -> dict[str, str]:
        """The producer settings that fill it (and measure the target's raw produce rate for it)."""
        return {**PRODUCER, "compression.type": self.compression}

    @property
    def value_bytes(self) -> int:
        """Bytes of record values in the topic."""
        return self.record_size * self.records


def datasets(quick: bool) -> list[Dataset]:
    """Full: 0.5 M x 1 KiB (~0.5 GB), 1.5 M x 100 B, and 1.5 M x 100 B written lz4-compressed; quick: 30 k x 1 KiB
    only (a smoke run, same code path)."""
    if quick:
        return [Dataset("1 KiB", "bench-1k", 1024, 30_000)]
    return [
        Dataset("1 KiB", "bench-1k", 1024, 500_000),
        Dataset("100 B", "bench-100b", 100, 1_500_000),
        Dataset("100 B lz4", "bench-100b-lz4", 100, 1_500_000, compression="lz4"),
    ]


def one_kib(topic: str, quick: bool) -> Dataset:
    """200,000 records of 1 KiB on `topic` (20,000 when quick): the copy the later sections repeat."""
    return Dataset("1 KiB", topic, 1024, 20_000 if quick else 200_000)


def fill(lab: Lab, dataset: Dataset) -> PerfResult:
    """Create the source topic and fill it with Kafka's producer performance tool; check the count."""
    say(f"filling {dataset.topic}: {dataset.records:,} x {dataset.label}")
    make_topics(lab.source_admin(), [dataset.topic], dataset.partitions)
    return fill_topic(lab.source, dataset, lab.run_dir("fill") / f"{dataset.topic}.log")


def fill_topic(cluster: KafkaCluster, dataset: Dataset, log_path: Path) -> PerfResult:
    """Fill the data set's existing topic on `cluster` with the perf tool, then check the record count."""
    result = run_perf(
        cluster.bootstrap_servers,
        dataset.topic,
        dataset.records,
        dataset.record_size,
        log_path=log_path,
        producer=dataset.producer,
    )
    check_filled(cluster, dataset)
    return result


def check_filled(cluster: KafkaCluster, dataset: Dataset) -> None:
    """Raise unless the data set's topic on `cluster` holds its records (no more, no fewer)."""
    probe = EndOffsets(cluster.client_properties(), dataset.topic, dataset.partitions)
    try:
        found = probe.total()
    finally:
        probe.close()
    if found != dataset.records:
        raise RuntimeError(f"{dataset.topic} holds {found} records after filling, expected {dataset.records}")


def raw_produce_rate(lab: Lab, dataset: Dataset, run: int) -> PerfResult:
    """The target brokers' raw produce rate for this record size: same producer settings, a fresh topic."""
    topic = f"ceiling-{dataset.topic}-{run}"
    admin = lab.target_admin()
    make_topics(admin, [topic], PARTITIONS)
    say(f"raw produce rate: {dataset.records:,} x {dataset.label} to the target")
    try:
        return run_perf(
            lab.target.bootstrap_servers,
            topic,
            dataset.records,
            dataset.record_size,
            log_path=lab.run_dir("ceiling") / f"{topic}.log",
            producer=dataset.producer,
        )
    finally:
        delete_topics(admin, [topic])
