"""A failover drill: the source cluster dies (every broker killed) at a random moment while data-mirror and
checkpoint run and consumer groups work on it; the groups resume on the target where MM2's own client
(RemoteClusterUtils) says.

Checkpoints follow the source's commits as a stream, so a group that commits as it consumes re-reads at most what
it consumed in the last two seconds before the source died, and a group that committed and then paused for two
seconds re-reads nothing; neither skips a copied record it had not processed. The same holds when a Filter drops
some records on the way (the dropped ones are gaps in the target's offsets): the source is copied to two targets at
once, as it is and through the Filter, and the groups resume on each.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from confluent_kafka import Message, TopicPartition

from shared.errors import KafkaOperationError
from shared.kafka.end_offsets import topic_end_offsets
from shared.kafka.factories import confluent_consumer, confluent_producer
from shared.kafka.partition_reader import read_all_partitions
from shared.localkafka import KafkaCluster
from tests.support.kafka_io import make_topic
from tests.support.mm2_client import translate_offsets
from tests.support.mm2_config import write_mm2_config
from tests.support.service_process import ServiceProcess

PARTITIONS = 2
PAUSED_AFTER = 1500  # records the paused group consumes before it stops
DROPPED_EVERY = 50  # with the filter: one record in 50 carries the header it drops
DROP_MARKED = {
    "transforms": "dropMarked",
    "transforms.dropMarked.type": "org.apache.kafka.connect.transforms.Filter",
    "transforms.dropMarked.predicate": "marked",
    "predicates": "marked",
    "predicates.marked.type": "org.apache.kafka.connect.transforms.predicates.HasHeaderKey",
    "predicates.marked.name": "drop-me",
}


@pytest.fixture
def doomed_source(kafka_runtime: str) -> Iterator[KafkaCluster]:
    """A source cluster of its own for each drill: the drill kills it."""
    cluster = KafkaCluster("DRILL")
    try:
        yield cluster.start()
    finally:
        cluster.stop()


class Load(threading.Thread):
    """Produces unique values `<partition>:<n>` at about 1,000 records a second until the source dies; with
    `marked`, every DROPPED_EVERY-th record carries the header the filter drops."""

    def __init__(self, props: Mapping[str, str], topic: str, marked: bool) -> None:
        super().__init__(daemon=True)
        self._producer = confluent_producer(props, **{"linger.ms": 5})
        self._topic = topic
        self._marked = marked
        self.stopping = threading.Event()

    def run(self) -> None:
        sent = 0
        while not self.stopping.is_set():
            for _ in range(20):
                partition = sent % PARTITIONS
                drop = self._marked and sent % DROPPED_EVERY == 7
                self._producer.produce(
                    self._topic,
                    value=f"{partition}:{sent}".encode(),
                    partition=partition,
                    headers=[("drop-me", b"1")] if drop else None,
                )
                sent += 1
            self._producer.poll(0)
            time.sleep(0.02)


class Group(threading.Thread):
    """A consumer group on the source that commits after every batch it processes; `consumed` keeps when each
    value was processed. With `stop_after`, it starts at the end of the topic, commits once it has that many
    records (its last commit is at the head, ahead of the newest offset sync) and stops consuming."""

    def __init__(self, props: Mapping[str, str], topic: str, group: str, stop_after: int | None = None) -> None:
        super().__init__(daemon=True)
        start = "earliest" if stop_after is None else "latest"
        self._consumer = confluent_consumer(
            props, **{"group.id": group, "auto.offset.reset": start, "enable.auto.commit": False}
        )
        self._consumer.subscribe([topic])
        self._stop_after = stop_after
        self.stopping = threading.Event()
        self.consumed: dict[bytes, float] = {}
        self.paused_at: float | None = None

    def run(self) -> None:
        try:
            while not self.stopping.is_set():
                batch = [m for m in self._consumer.consume(num_messages=200, timeout=0.1) if m.error() is None]
                if self._stop_after is not None:
                    batch = batch[: self._stop_after - len(self.consumed)]
                if not batch:
                    continue
                now = time.monotonic()
                for message in batch:
                    self.consumed[message.value() or b""] = now
                self._consumer.commit(offsets=self._positions(batch), asynchronous=False)
                if self._stop_after is not None and len(self.consumed) >= self._stop_after:
                    self.paused_at = time.monotonic()
                    return
        except Exception:  # the source died under the consumer: what it committed so far is what counts
            return
        finally:
            self._consumer.close()  # else it keeps calling the dead broker for the rest of the session

    @staticmethod
    def _positions(batch: list[Message]) -> list[TopicPartition]:
        last: dict[tuple[str, int], int] = {}
        for message in batch:
            last[(message.topic() or "", message.partition() or 0)] = message.offset() or 0
        return [TopicPartition(topic, partition, offset + 1) for (topic, partition), offset in last.items()]

    def consumed_since(self, moment: float) -> int:
        """How many records the group processed from `moment` on."""
        return sum(1 for at in self.consumed.values() if at >= moment)


def _mirrored(target: Mapping[str, str], remote: str) -> int:
    """Records on the target so far; 0 while the new remote topic has no leader yet."""
    try:
        return topic_end_offsets(target, [remote]).get(remote) or 0
    except KafkaOperationError:
        return 0


def reprocessed(
    target: Mapping[str, str], remote: str, resume: Mapping[tuple[str, int], int], group: Group
) -> list[float]:
    """When the group had processed each record it reads again on the target from `resume`; fails if a copied
    record between the group's first processed one and `resume` was never processed (skipped: lost to the group)."""
    copies = read_all_partitions(target, remote)
    assert sorted(copies) == list(range(PARTITIONS))
    consumed_from = {int(value.split(b":")[0]) for value in group.consumed}
    # Every partition the group consumed from has a checkpoint; a partition it never committed it reads from the
    # start, where it had processed nothing.
    assert {(remote, partition) for partition in consumed_from} <= set(resume), resume
    # A group that started at the end (the paused one) never meant to read what came before its first record.
    never = 1 << 62
    first = {
        partition: min((r.offset for r in records if (r.value or b"") in group.consumed), default=never)
        for partition, records in copies.items()
    }
    skipped = [
        record.value
        for partition, records in copies.items()
        for record in records
        if first[partition] <= record.offset < resume.get((remote, partition), 0)
        and (record.value or b"") not in group.consumed
    ]
    assert skipped == [], f"records the group never processed lie below its resume point: {skipped[:5]}"
    return [
        group.consumed[record.value or b""]
        for partition, records in copies.items()
        for record in records
        if record.offset >= resume.get((remote, partition), 0) and (record.value or b"") in group.consumed
    ]


def test_groups_failed_over_after_the_source_died_reread_at_most_their_last_two_seconds(
    doomed_source: KafkaCluster, cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    """One source, copied by two flows: to B as it is, and to A through a Filter that drops one record in 50."""
    source, plain, filtered = f"S{unique}", f"T{unique}", f"U{unique}"
    topic, remote = f"drill-{unique}", f"S{unique}.drill-{unique}"
    a_props = doomed_source.client_properties()
    targets = {plain: cluster_b.client_properties(), filtered: cluster_a.client_properties()}
    make_topic(a_props, topic, partitions=PARTITIONS)
    for props in targets.values():
        make_topic(props, remote, partitions=PARTITIONS)  # what topic-sync does
    flow = {"topics": topic, "groups": f"drill-{unique}-.*"}
    config = write_mm2_config(
        tmp_path / "mm2.properties",
        {source: doomed_source, plain: cluster_b, filtered: cluster_a},
        {f"{source}->{plain}": flow, f"{source}->{filtered}": {**flow, **DROP_MARKED}},
    )
    load = Load(a_props, topic, marked=True)
    load.start()
    busy = Group(a_props, topic, f"drill-{unique}-busy")
    paused = Group(a_props, topic, f"drill-{unique}-paused", stop_after=PAUSED_AFTER)
    services = [
        ServiceProcess("data_mirror", config, tmp_path),
        ServiceProcess("checkpoint", config, tmp_path, "--log-level", "DEBUG"),  # every round, if the drill fails
    ]

    def mirrored() -> int:
        return min(_mirrored(props, remote) for props in targets.values())

    try:
        for service in services:
            service.start()
        # The groups start once records are being mirrored: a group that stops before its records were copied
        # cannot resume exactly on the target, whatever the checkpoints do.
        deadline = time.monotonic() + 180
        while mirrored() < 500:
            assert time.monotonic() < deadline, "data-mirror did not start copying"
            time.sleep(0.5)  # each look is a new admin client: a broker's CPU that the suite needs elsewhere
        busy.start()
        paused.start()
        while paused.paused_at is None or len(busy.consumed) < 3000 or mirrored() < 3000:
            assert time.monotonic() < deadline, "the groups did not get going"
            time.sleep(0.5)
        # The source dies at a random moment, at least two seconds after the paused group's last commit.
        time.sleep(max(random.uniform(1.0, 6.0), paused.paused_at + 2.0 - time.monotonic()))
        for node in doomed_source.nodes:
            node.process.kill()
        died = time.monotonic()
        load.stopping.set()
        busy.stopping.set()
        time.sleep(3)  # the services keep running, as they would in a real disaster
    finally:
        for service in services:
            service.kill()
        load.stopping.set()
        busy.stopping.set()

    for target, props in targets.items():
        busy_resume = translate_offsets(props, source, f"drill-{unique}-busy")
        paused_resume = translate_offsets(props, source, f"drill-{unique}-paused")
        busy_again = reprocessed(props, remote, busy_resume, busy)
        paused_again = reprocessed(props, remote, paused_resume, paused)
        oldest = died - min(busy_again) if busy_again else 0.0
        print(
            f"\n{'filtered' if target == filtered else 'plain'}: busy group re-read {len(busy_again)} (the oldest "
            f"processed {oldest:.2f} s before the source died), consumed {busy.consumed_since(died - 2.0)} in its last "
            f"2 s; paused group re-read {len(paused_again)}"
        )
        # What the busy group re-reads is part of what it processed in its last two seconds; the paused one, nothing.
        assert oldest <= 2.0, target
        assert len(busy_again) <= busy.consumed_since(died - 2.0), target
        assert paused_again == [], target
    marked = {target: [v for v in _values(props, remote) if _is_marked(v)] for target, props in targets.items()}
    assert marked[plain], "the plain flow copies the marked records too"
    assert marked[filtered] == [], "the filter dropped the marked"


def _values(props: Mapping[str, str], topic: str) -> list[bytes]:
    return [r.value or b"" for records in read_all_partitions(props, topic).values() for r in records]


def _is_marked(value: bytes) -> bool:
    return int(value.split(b":")[1]) % DROPPED_EVERY == 7
