"""The replica fetcher's copy rate: Kafka moving the same data set from one broker to another, the honest ceiling.

Batch forwarding sends batches already built, so the perf tool's raw produce rate (which builds every record)
is no longer an upper bound. Kafka's own replica fetcher copies record batches from a leader to a follower the
way forwarding does. A two-broker cluster with the lab's broker settings holds each data set on broker 1; each
measure adds broker 2 as a replica of every partition and times its first byte, the moment it holds all of
the leader's bytes and the moment it is in sync (in a small Java helper using the Admin API, so no JVM start is
inside the times), then removes it again for the next repeat.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka.admin import NewTopic

from benchmarks.console import say
from benchmarks.datasets import PARTITIONS, Dataset, fill_topic
from benchmarks.lab import BROKER_HEAP_MB, BROKER_OVERRIDES
from benchmarks.model import BenchOptions
from shared.kafka.factories import confluent_admin
from shared.localkafka import HarnessError, KafkaCluster, kafka_classpath
from shared.localkafka.jars import compile_against_kafka, java_binary

JAVA_SOURCE = Path(__file__).resolve().parent / "java" / "ReplicaCatchUp.java"
_MAIN_CLASS = "ReplicaCatchUp"
LEADER, FOLLOWER = 1, 2
MIB = 1024 * 1024


@dataclass(frozen=True)
class ReplicaCopy:
    """One catch-up of a follower, times from the reassignment request: its first byte, the moment it held all
    the leader's bytes, and the moment it was in every partition's ISR."""

    dataset: str
    records: int
    value_bytes: int
    first_s: float
    copied_s: float
    in_sync_s: float

    @property
    def seconds(self) -> float:
        """The copy alone (first -> last byte), as the tools' first -> last record."""
        return max(self.copied_s - self.first_s, 1e-3)

    @property
    def records_per_s(self) -> float:
        """Records copied per second (first -> last)."""
        return self.records / self.seconds

    @property
    def mib_per_s(self) -> float:
        """Record-value MiB copied per second (first -> last), as the copy rates count them."""
        return self.value_bytes / MIB / self.seconds


class ReplicaBench:
    """A two-broker cluster holding every data set on broker 1, ready to time follower catch-ups."""

    def __init__(self, cluster: KafkaCluster, classes: Path, logs: Path) -> None:
        self.cluster = cluster
        self._classes = classes
        self._logs = logs

    def fill(self, dataset: Dataset) -> None:
        """Create the data set's topic with every partition on the leader and fill it as the source is filled."""
        self.make_topics([dataset.topic], PARTITIONS)
        say(f"replica ceiling: filling {dataset.topic} on broker {LEADER}")
        fill_topic(self.cluster, dataset, self._logs / f"fill-{dataset.topic}.log")

    def catch_up(self, dataset: Dataset, timeout_s: float) -> ReplicaCopy:
        """Add the follower to every partition, time it into the ISR, take it out again."""
        return self.copy_topics([dataset.topic], dataset.label, dataset.records, dataset.value_bytes, timeout_s)

    def make_topics(self, topics: Sequence[str], partitions: int) -> None:
        """Topics whose every partition is on the leader alone, as the follower's copy needs them."""
        admin = confluent_admin(self.cluster.client_properties())
        on_leader = [[LEADER]] * partitions
        # types-confluent-kafka types broker ids as str; librdkafka takes ints (as Kafka's protocol does)
        made = [NewTopic(topic, num_partitions=partitions, replica_assignment=on_leader) for topic in topics]  # type: ignore[arg-type]
        for future in admin.create_topics(made, operation_timeout=60).values():
            future.result(timeout=120)

    def copy_topics(
        self, topics: Sequence[str], label: str, records: int, value_bytes: int, timeout_s: float
    ) -> ReplicaCopy:
        """Add the follower to every partition of `topics`, time it into the ISR, take it out again."""
        command = [
            java_binary(),
            "-Xmx256m",
            "-Dlog4j2.level=WARN",
            "-cp",
            os.pathsep.join([kafka_classpath(quiet=True), str(self._classes)]),
            _MAIN_CLASS,
            self.cluster.bootstrap_servers,
            ",".join(topics),
            str(LEADER),
            str(FOLLOWER),
            str(int(timeout_s * 1000)),
        ]
        # the helper waits up to `timeout_s` for each of the copy, the ISR and the removal
        result = subprocess.run(command, capture_output=True, text=True, timeout=3 * timeout_s + 60, check=False)
        if result.returncode != 0:
            raise HarnessError(f"{_MAIN_CLASS} failed (exit {result.returncode}): {result.stderr[-2000:]}")
        answer = parse_answer(result.stdout)
        first, copied, in_sync = (answer[f"{mark}_micros"] / 1e6 for mark in ("first", "copied", "in_sync"))
        say(f"replica ceiling: {label} copied in {copied - first:.1f} s, in sync after {in_sync:.1f} s")
        return ReplicaCopy(label, records, value_bytes, first, copied, in_sync)


def parse_answer(stdout: str) -> dict[str, int]:
    """The helper's JSON line (the Java client may log other lines around it)."""
    for line in stdout.splitlines():
        if line.startswith('{"partitions"'):
            answer: dict[str, int] = json.loads(line)
            return answer
    raise HarnessError(f"{_MAIN_CLASS} printed no result: {stdout[-2000:]}")


@contextmanager
def replica_bench(options: BenchOptions, sets: Sequence[Dataset]) -> Iterator[ReplicaBench]:
    """Start the two-broker cluster with the lab's broker settings, fill every data set, yield; stop and delete."""
    workdir = options.workdir / "kafka-replica"
    shutil.rmtree(workdir, ignore_errors=True)
    classes = options.workdir / "classes-replica"
    compiled = classes / f"{_MAIN_CLASS}.class"
    if not compiled.exists() or compiled.stat().st_mtime < JAVA_SOURCE.stat().st_mtime:
        compile_against_kafka(JAVA_SOURCE, classes)
    logs = options.workdir / "runs" / "replica"
    logs.mkdir(parents=True, exist_ok=True)
    cluster = KafkaCluster(
        "bench-replica", brokers=2, workdir=workdir, heap_mb=BROKER_HEAP_MB, broker_overrides=BROKER_OVERRIDES
    )
    try:
        cluster.start(timeout_s=180)
        bench = ReplicaBench(cluster, classes, logs)
        for dataset in sets:
            bench.fill(dataset)
        yield bench
    finally:
        cluster.stop()
        shutil.rmtree(workdir, ignore_errors=True)
