"""The benchmark's two clusters, started once with the project's launcher and shared by every section here.

Every run gets fresh cluster aliases (`src3`/`tgt3`): its remote topics (`src3.bench-1k`), MM2's worker
topics and group (`mm2-offsets.src3.internal`, `src3-mm2`) and Strait's progress topic
(`strait.offsets.src3.internal`) are all new, so no run resumes from another's state and nothing has to
be deleted and recreated under the same name.
"""

from __future__ import annotations

import itertools
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import IsolationLevel, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from benchmarks.model import BenchOptions
from benchmarks.usage import Usage
from benchmarks.verify_speed import Verification
from shared.kafka.factories import confluent_admin, confluent_consumer
from shared.kafka.topics import create_topic
from shared.localkafka import KafkaCluster
from shared.localkafka.fault_proxy import FaultProxy

BROKER_HEAP_MB = 1024
LOGS_TIMEOUT_S = 300  # for a broker to make every log of a new topic
# Index files of 256 KiB instead of Kafka's 10 MiB. A broker makes both index files of a log at their full size,
# sparse, and maps them into memory; the first entry it writes faults a page in, and this machine's disk reads
# ahead 8 MiB (`/sys/block/*/queue/read_ahead_kb`; Linux's usual default is 128 KiB), so every index read ahead
# megabytes of zeros into the page cache: filling 4,000 partitions made 21.5 GB of cache (5.65 GB for 2,000 of the
# index files, by fincore), the machine's memory ran out and its page reclaim stalled every process (memory
# pressure 34 %), whichever tool ran. With 256 KiB indexes the same fill made 2.2 GB and took 43 s instead of 60 s;
# a segment then rolls after about 85 MiB of log instead of 1 GiB, which no section reaches in one partition.
INDEX_BYTES = 256 * 1024
BROKER_OVERRIDES = {
    "num.io.threads": "4",
    "num.network.threads": "3",
    "log.index.size.max.bytes": str(INDEX_BYTES),
}


@dataclass
class Lab:
    """Source and target clusters plus what sections share: usage records and the profile of Strait."""

    options: BenchOptions
    source: KafkaCluster
    target: KafkaCluster
    profile_wanted: bool = True  # one extra Strait copy under py-spy, for the notes
    usage: list[Usage] = field(default_factory=list)
    verifications: list[Verification] = field(default_factory=list)  # of finished throughput copies
    profile: dict[str, Any] | None = None
    verify_profile: dict[str, Any] | None = None  # py-spy on one extra verification (section 1b's notes)
    _runs: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def aliases(self) -> tuple[str, str]:
        """A fresh (source alias, target alias) pair for one tool run."""
        run = next(self._runs)
        return f"src{run}", f"tgt{run}"

    def run_dir(self, name: str) -> Path:
        """A directory for one run's config and logs."""
        path = self.options.workdir / "runs" / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    def source_admin(self) -> AdminClient:
        """Admin client on the source cluster."""
        return confluent_admin(self.source.client_properties())

    def target_admin(self) -> AdminClient:
        """Admin client on the target cluster."""
        return confluent_admin(self.target.client_properties())


@contextmanager
def open_lab(options: BenchOptions, *, profile: bool = True) -> Iterator[Lab]:
    """Start both clusters (in parallel) on fresh storage, yield the lab, stop them and delete their data.

    The source can also be reached through a fault proxy (`source.via_proxy()`, faults on `source.network`), for
    the section that puts it far away; every other section talks to it directly and never goes through it."""
    proxy = FaultProxy(options.workdir / "toxiproxy").start()
    source, target = _cluster(options, "source", proxy), _cluster(options, "target")
    try:
        source.launch()
        target.launch()
        source.wait_ready(180)
        target.wait_ready(180)
        yield Lab(options, source, target, profile_wanted=profile)
    finally:
        source.stop()
        target.stop()
        proxy.stop()
        for cluster in (source, target):
            shutil.rmtree(cluster.workdir, ignore_errors=True)


def _cluster(options: BenchOptions, role: str, proxy: FaultProxy | None = None) -> KafkaCluster:
    workdir = options.workdir / f"kafka-{role}"
    shutil.rmtree(workdir, ignore_errors=True)
    return KafkaCluster(
        f"bench-{role}", workdir=workdir, heap_mb=BROKER_HEAP_MB, broker_overrides=BROKER_OVERRIDES, proxy=proxy
    )


def make_topics(admin: AdminClient, names: list[str], partitions: int) -> None:
    """Create topics (replication factor 1 on these single-broker clusters)."""
    for name in names:
        create_topic(admin, name, partitions=partitions, replication_factor=1)


def delete_topics(admin: AdminClient, names: list[str]) -> None:
    """Delete topics that exist (frees the disk a run wrote); never reuses the names, so no wait."""
    existing = set(admin.list_topics(timeout=15).topics)
    doomed = [name for name in names if name in existing]
    if doomed:
        for future in admin.delete_topics(doomed, operation_timeout=30).values():
            future.result(timeout=60)


def topic_exists(admin: AdminClient, name: str) -> bool:
    """True if the topic is in the cluster's metadata now."""
    return name in admin.list_topics(timeout=15).topics


class EndOffsets:
    """Sums the end offsets of a topic's partitions (cheap, no records read), for progress polling."""

    def __init__(self, props: dict[str, str], topic: str, partitions: int) -> None:
        self.topic = topic
        self.partitions = partitions
        self._consumer = confluent_consumer(props, **{"group.id": "strait-bench-probe", "enable.auto.commit": False})

    def total(self) -> int:
        """Sum of high watermarks now; 0 while the topic does not exist yet."""
        total = 0
        for partition in range(self.partitions):
            try:
                _low, high = self._consumer.get_watermark_offsets(TopicPartition(self.topic, partition), timeout=5)
            except Exception:  # KafkaException: unknown topic or partition while the tool creates it
                return 0
            total += max(0, high)
        return total

    def close(self) -> None:
        """Close the probe's consumer."""
        self._consumer.close()


def wait_until(predicate: Any, timeout_s: float, what: str, interval_s: float = 0.2) -> None:
    """Poll `predicate()` until true; TimeoutError naming `what` after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout_s:.0f}s waiting for {what}")
        time.sleep(interval_s)


def create_topics(admin: AdminClient, topics: list[str], partitions: int) -> None:
    """All `topics` in one request (one at a time would take minutes at 400 topics); `admin` is kept while the
    futures are awaited (a collected client cancels them)."""
    futures = admin.create_topics([NewTopic(topic, partitions, 1) for topic in topics], operation_timeout=60)
    for future in futures.values():
        future.result(timeout=120)
    wanted = set(topics)

    def led() -> bool:
        metadata = admin.list_topics(timeout=15).topics
        return all(
            name in metadata
            and len(metadata[name].partitions) == partitions
            and all(p.leader >= 0 for p in metadata[name].partitions.values())
            for name in wanted
        )

    wait_until(led, 120, f"leaders for {len(topics)} new topics")


def make_ready_topics(
    cluster: KafkaCluster,
    topics: list[str],
    per_topic: int,
    *,
    ends: RemoteEnds | None = None,
    timeout_s: float = LOGS_TIMEOUT_S,
) -> None:
    """Create `topics` on `cluster` and wait until the broker made every log of them (each partition answers an
    offset look-up; `ends`: the probe to ask, if the caller keeps one). A producer started earlier can meet logs
    still being made: at 1,000 partitions Kafka's perf tool once had one partition's batch never sent, expired after
    120 s, and the data set came out short."""
    create_topics(confluent_admin(cluster.client_properties()), topics, per_topic)
    probe = ends or RemoteEnds(cluster.client_properties(), topics, per_topic)
    wanted = len(topics) * per_topic
    wait_until(lambda: len(probe.ends()) == wanted, timeout_s, f"the logs of {len(topics)} new topics")


class RemoteEnds:
    """End offsets of every partition of the remote topics that exist so far, in one batched look-up per poll."""

    def __init__(self, props: dict[str, str], topics: list[str], per_topic: int) -> None:
        self._admin = confluent_admin(props)
        self._topics = topics
        self._per_topic = per_topic

    def ends(self) -> dict[tuple[str, int], int]:
        """(remote topic, partition) -> end offset, for the topics created so far."""
        existing = set(self._admin.list_topics(timeout=15).topics)
        wanted = [
            TopicPartition(topic, partition)
            for topic in self._topics
            if topic in existing
            for partition in range(self._per_topic)
        ]
        if not wanted:
            return {}
        futures = self._admin.list_offsets(
            {tp: OffsetSpec.latest() for tp in wanted},
            isolation_level=IsolationLevel.READ_UNCOMMITTED,
            request_timeout=15,
        )
        found: dict[tuple[str, int], int] = {}
        for tp, future in futures.items():
            try:
                found[(tp.topic, tp.partition)] = int(future.result().offset)  # type: ignore[attr-defined]
            except KafkaException:
                continue  # a topic still being created: not counted yet
        return found

    def close(self) -> None:
        """Nothing to close (the admin client goes with the object)."""
