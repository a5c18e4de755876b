"""Broker faults under load: data-mirror (a real process) keeps every acknowledged record while one broker of
the source or the target cluster restarts (kill -9 or a clean shutdown), or every partition's leader moves to
another live broker (a reassignment, as an operator or a rebalancer makes one), and a producer keeps writing.

Both clusters have three brokers, the mirrored topics and every internal topic (progress, offset syncs,
control, status, transaction state) have replication factor 3, and the producer writes with acks=all and
idempotence, so a broker restart must cost nothing: lost == 0, duplicates reported. One at-least-once
data-mirror process serves every fault (each test has its own topic) and must survive them all; within a test the
fault hits the source first and, once copying has gone on after it, the target (one producer run, one comparison).
The exactly-once case runs its own process.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Message

from shared.control import CONTROL_TOPIC, STATUS_TOPIC, progress_topic
from shared.kafka.factories import confluent_admin, confluent_producer
from shared.kafka.topics import create_topic
from shared.localkafka import KafkaCluster
from tests.support.kafka_io import end_offsets, read_to_end
from tests.support.leaders import move_leaders
from tests.support.mm2_config import write_mm2_config
from tests.support.replica_check import ReplicaReport, compare_topics
from tests.support.service_process import ServiceProcess
from tests.support.verify_oracle import assert_nothing_lost

pytestmark = pytest.mark.slow

PARTITIONS = 3
RATE_PER_PARTITION = 40  # records/s: small data, the point is records in flight while the broker restarts
THREE_REPLICAS = {
    "replication.factor": "3",
    "checkpoints.topic.replication.factor": "3",
    "heartbeats.topic.replication.factor": "3",
    "offset-syncs.topic.replication.factor": "3",
}


class ContinuousProducer:
    """Writes `<partition>:<seq>` to every partition at a steady rate (acks=all, idempotent) until stopped."""

    def __init__(self, props: Mapping[str, str], topic: str, partitions: int) -> None:
        self._producer = confluent_producer(props, **{"enable.idempotence": True, "acks": "all", "linger.ms": 5})
        self._topic = topic
        self._partitions = partitions
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"producer-{topic}", daemon=True)
        self.sent = 0
        self.acked: set[tuple[int, bytes]] = set()
        self.failed: list[str] = []

    def _on_delivery(self, err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            self.failed.append(f"{err.name()}: {err.str()}")
        else:
            self.acked.add((msg.partition() or 0, msg.value() or b""))

    def _run(self) -> None:
        seq = 0
        while not self._stop.is_set():
            for partition in range(self._partitions):
                value = f"{partition}:{seq}".encode()
                self._producer.produce(self._topic, value=value, partition=partition, on_delivery=self._on_delivery)
                self.sent += 1
            seq += 1
            self._producer.poll(0)
            self._stop.wait(1 / RATE_PER_PARTITION)

    def start(self) -> ContinuousProducer:
        """Start writing in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop writing and wait for every outstanding acknowledgement (bounded)."""
        self.halt()
        remaining = self._producer.flush(120)
        assert remaining == 0, f"{remaining} records never acknowledged by the source"

    def halt(self) -> None:
        """Stop writing (safe to call twice); what is queued is left to the client."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)


def _end_offsets(props: Mapping[str, str], topic: str) -> int:
    """Sum of the high watermarks of `topic`."""
    return sum(end_offsets(props, topic))


def _wait_until(what: str, check: object, timeout_s: float, interval_s: float = 1.0) -> None:
    """Poll `check()` until true; fail with `what` after `timeout_s`."""
    assert callable(check)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except Exception:  # the cluster may be between leaders: look again
            pass
        time.sleep(interval_s)
    raise AssertionError(f"timed out after {timeout_s}s waiting until {what}")


def _leader_index(cluster: KafkaCluster, topic: str, partition: int = 0) -> int:
    """The index in `cluster.nodes` of the broker leading `topic`-`partition`."""
    metadata = confluent_admin(cluster.client_properties()).list_topics(topic, timeout=10)
    leader = metadata.topics[topic].partitions[partition].leader
    return next(i for i, node in enumerate(cluster.nodes) if node.node_id == leader)


def _replication_factors(cluster: KafkaCluster, topics: list[str]) -> dict[str, int]:
    """Each existing topic's replication factor."""
    metadata = confluent_admin(cluster.client_properties()).list_topics(timeout=10)
    return {
        name: len(next(iter(metadata.topics[name].partitions.values())).replicas)
        for name in topics
        if name in metadata.topics
    }


def _replicated_topic(cluster: KafkaCluster, name: str) -> None:
    create_topic(
        confluent_admin(cluster.client_properties()),
        name,
        partitions=PARTITIONS,
        replication_factor=3,
        configs={"min.insync.replicas": "2"},
    )


@dataclass
class Scenario:
    """Which clusters the fault hits, one after the other, and which fault (a broker restart, hard or clean, or
    leaders moved); the data-mirror process that copies meanwhile."""

    source: KafkaCluster
    target: KafkaCluster
    hit: tuple[KafkaCluster, ...]
    mirror: ServiceProcess
    hard: bool
    label: str
    exactly_once: bool = False
    move_leaders: bool = False  # instead of a restart: every partition's leader moves to another live broker


def _start_mirror(config: Path, log_dir: Path) -> ServiceProcess:
    mirror = ServiceProcess("data_mirror", config, log_dir, env={"STRAIT_COMMIT_INTERVAL_MS": "500"}).start()
    try:
        mirror.wait_for_log("driver_ready", timeout_s=240)
    except BaseException:
        mirror.kill()
        raise
    return mirror


@pytest.fixture(scope="module")
def shared_mirror(
    three_broker_cluster: KafkaCluster, three_broker_target: KafkaCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServiceProcess]:
    """One at-least-once data-mirror A(3 brokers)->B(3 brokers) for every `bf-*` topic, through every restart."""
    log_dir = tmp_path_factory.mktemp("broker-faults")
    config = write_mm2_config(
        log_dir / "mm2.properties",
        {"A": three_broker_cluster, "B": three_broker_target},
        {"A->B": {"topics": "bf-.*"}},
        extra=THREE_REPLICAS,
    )
    mirror = _start_mirror(config, log_dir)
    try:
        yield mirror
    finally:
        mirror.kill()


def _assert_alive(mirror: ServiceProcess) -> None:
    assert mirror.popen is not None
    assert mirror.popen.poll() is None, f"data-mirror exited:\n{mirror.tail()}"


def _mirror_through_restart(scenario: Scenario, topic: str) -> ReplicaReport:
    """Mirror `topic` with a producer writing throughout the scenario's faults, one cluster after the other; the
    replica report."""
    source, target = scenario.source, scenario.target
    remote = f"A.{topic}"
    source_props, target_props = source.client_properties(), target.client_properties()
    isolation = "read_committed" if scenario.exactly_once else "read_uncommitted"
    producer = ContinuousProducer(source_props, topic, PARTITIONS)
    began = time.monotonic()
    phases: list[str] = []

    def phase(name: str) -> None:
        phases.append(f"{name}@{time.monotonic() - began:.0f}s")

    try:
        producer.start()
        _wait_until("data-mirror copies records", lambda: _end_offsets(target_props, remote) > 0, timeout_s=120)
        phase("copying")
        for restarted in scenario.hit:
            side = "source" if restarted is source else "target"
            internal = ["mm2-offset-syncs.B.internal"] if restarted is source else []
            internal += [progress_topic("A"), CONTROL_TOPIC, STATUS_TOPIC] if restarted is target else []
            factors = _replication_factors(restarted, internal)
            assert factors == dict.fromkeys(internal, 3), f"internal topics must have 3 replicas: {factors}"
            hit_topic = topic if restarted is source else remote
            if scenario.move_leaders:
                moved = move_leaders(restarted, hit_topic)
                assert sorted(moved) == list(range(PARTITIONS)), moved
                assert all(old != new for old, new in moved.values()), moved
                phase(f"{side} leaders moved")
            else:
                restarted.restart_node(_leader_index(restarted, hit_topic), hard=scenario.hard, timeout_s=120)
                phase(f"{side} broker back")
            copied = end_offsets(target_props, remote)  # asked again while leaders settle after the fault
            _wait_until(
                f"every partition copying again after the {side} fault",
                lambda copied=copied: all(
                    now > then for now, then in zip(end_offsets(target_props, remote), copied, strict=True)
                ),
                timeout_s=120,
            )
            phase(f"{side}: every partition copying again")
        time.sleep(5)  # keep writing a little after the last fault
        producer.stop()
        phase("producer stopped")
        _assert_alive(scenario.mirror)
        source_end = _end_offsets(source_props, topic)
        _wait_until(
            "the target holds as many records as the source",
            lambda: _end_offsets(target_props, remote) >= source_end,
            timeout_s=150,
        )
        phase("caught up")
        written = {(r.partition, r.value or b"") for r in read_to_end(source_props, topic, timeout_s=60)}
        missing_acked = len(producer.acked - written)
        assert missing_acked == 0, f"{missing_acked} acknowledged records are not in the source topic"
        deadline = time.monotonic() + 90
        while True:
            report = compare_topics(source_props, topic, target_props, remote, timeout_s=30, isolation_level=isolation)
            if report.lost == 0 or time.monotonic() > deadline:
                break
        print(
            f"\n{report.line(scenario.label)} acked={len(producer.acked)} "
            f"producer_errors={len(producer.failed)} phases: {' '.join(phases)}"
        )
        _assert_alive(scenario.mirror)
        return report
    finally:
        producer.halt()


def _topic_pair(source: KafkaCluster, target: KafkaCluster, topic: str) -> str:
    _replicated_topic(source, topic)
    _replicated_topic(target, f"A.{topic}")  # topic-sync's job; created here so that only data-mirror runs
    return topic


def test_target_broker_kill_with_exactly_once_loses_nothing_and_repeats_nothing(
    three_broker_cluster: KafkaCluster, three_broker_target: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    topic = _topic_pair(three_broker_cluster, three_broker_target, f"bfx-{unique}")
    config = write_mm2_config(
        tmp_path / "mm2.properties",
        {"A": three_broker_cluster, "B": three_broker_target},
        {"A->B": {"topics": topic, "exactly.once.support": "enabled"}},
        extra=THREE_REPLICAS,
    )
    mirror = _start_mirror(config, tmp_path)
    try:
        scenario = Scenario(
            three_broker_cluster,
            three_broker_target,
            (three_broker_target,),
            mirror,
            hard=True,
            label="target broker kill -9, exactly-once",
            exactly_once=True,
        )
        report = _mirror_through_restart(scenario, topic)
    finally:
        mirror.kill()
    assert report.lost == 0, f"lost {report.lost}, e.g. {report.lost_examples}"
    assert report.duplicates == 0, "exactly-once: a committed record arrived twice"
    assert report.moved == 0
    assert_nothing_lost(config, "A->B", topic, records=report.source_records, exactly_once=True)


@pytest.mark.parametrize("hard", [True, False], ids=["kill-9", "clean-shutdown"])
def test_broker_restart_loses_nothing(
    three_broker_cluster: KafkaCluster,
    three_broker_target: KafkaCluster,
    shared_mirror: ServiceProcess,
    hard: bool,
    unique: str,
) -> None:
    """A source broker restarts, then (copying again) a target broker: each the leader of the partition 0 it holds."""
    topic = _topic_pair(three_broker_cluster, three_broker_target, f"bf-{unique}")
    scenario = Scenario(
        three_broker_cluster,
        three_broker_target,
        (three_broker_cluster, three_broker_target),
        shared_mirror,
        hard=hard,
        label=f"source then target broker {'kill -9' if hard else 'clean restart'}",
    )
    report = _mirror_through_restart(scenario, topic)
    assert report.lost == 0, f"lost {report.lost}, e.g. {report.lost_examples}"
    assert report.moved == 0


def test_leaders_moved_mid_copy_lose_nothing(
    three_broker_cluster: KafkaCluster,
    three_broker_target: KafkaCluster,
    shared_mirror: ServiceProcess,
    unique: str,
) -> None:
    """Every partition's leader moves to another broker while records are written and copied, on the source and
    then on the target: fetches and produces meet NOT_LEADER_OR_FOLLOWER from a broker that is still up, and
    follow the new leader."""
    topic = _topic_pair(three_broker_cluster, three_broker_target, f"bf-{unique}")
    scenario = Scenario(
        three_broker_cluster,
        three_broker_target,
        (three_broker_cluster, three_broker_target),
        shared_mirror,
        hard=False,
        label="source then target leaders moved",
        move_leaders=True,
    )
    report = _mirror_through_restart(scenario, topic)
    assert report.lost == 0, f"lost {report.lost}, e.g. {report.lost_examples}"
    assert report.moved == 0
    config = shared_mirror.config
    assert_nothing_lost(config, "A->B", topic, records=report.source_records)
