"""A source log truncated under the copy position (an unclean leader election) is copied again from where it
diverged, as Kafka's Java consumer resets to the first offset known to diverge (KIP-320): every record the source
holds afterwards reaches the target once, in order, and progress never passes the records written after the
truncation.

The truncation is real: on a three-node source, the follower of a two-replica partition is stopped, 30 records
are written with acks=1 to the leader alone and copied, the leader is stopped, the follower is started and elected
unclean (its log ends before those 30), 40 new records are written at the same offsets, and the old leader comes
back and truncates. data-mirror runs throughout, copying the topic to two targets (record by record to A, forwarding
batches to B); in the "frozen" case it is stopped (SIGSTOP) from before the election until the new records are
written, so it finds the log truncated only when the new leader has written past its position again (position 80,
log end 90): the records at 50..79 are new and must be copied too.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import ElectionType, KafkaException, TopicPartition  # type: ignore[attr-defined]  # (stubs lag)
from confluent_kafka.admin import NewTopic

from shared.kafka.factories import confluent_admin, confluent_producer
from shared.localkafka import KafkaCluster
from tests.support.kafka_io import Rec, consume_all, consume_to_end, make_topic
from tests.support.mm2_config import write_mm2_config
from tests.support.service_process import ServiceProcess
from tests.support.waiting import wait_until


@pytest.fixture(scope="module")
def source(kafka_runtime: str) -> Iterator[KafkaCluster]:
    """A three-node source of this file's own: the test stops and starts its nodes."""
    cluster = KafkaCluster("TR", brokers=3)
    try:
        yield cluster.start()
    finally:
        cluster.stop()


def _write(cluster: KafkaCluster, topic: str, values: list[bytes], acks: str) -> None:
    producer = confluent_producer(
        cluster.client_properties(), **{"acks": acks, "enable.idempotence": acks == "all", "linger.ms": 5}
    )
    for value in values:
        producer.produce(topic, value, partition=0)
    assert producer.flush(60) == 0


def _leader(cluster: KafkaCluster, topic: str) -> int:
    metadata = confluent_admin(cluster.client_properties()).list_topics(timeout=10)
    found = metadata.topics.get(topic)
    return -1 if found is None or not found.partitions else found.partitions[0].leader


def _replicas(cluster: KafkaCluster, topic: str) -> list[int]:
    metadata = confluent_admin(cluster.client_properties()).list_topics(timeout=10)
    return list(metadata.topics[topic].partitions[0].replicas)


def _elect_unclean(cluster: KafkaCluster, topic: str, node: int) -> None:
    admin = confluent_admin(cluster.client_properties())
    deadline = time.monotonic() + 90
    while _leader(cluster, topic) != node:
        assert time.monotonic() < deadline, f"node {node} was not elected leader of {topic}"
        # The quorum is still forming, an election is under way, or (on a loaded machine) the answer takes longer.
        with contextlib.suppress(KafkaException, TimeoutError):
            admin.elect_leaders(ElectionType.UNCLEAN, [TopicPartition(topic, 0)]).result(15)  # type: ignore[attr-defined]
        time.sleep(1)


# One data-mirror copies the truncated topic twice: to A record by record, to B forwarding batches.
COPY_BATCHES = {"TR->A": "off", "TR->B": "auto"}
MIRROR_ENV = {"STRAIT_COMMIT_INTERVAL_MS": "300"}


@contextlib.contextmanager
def _every_node_back(cluster: KafkaCluster) -> Iterator[None]:
    """Whatever happens in the test, the next one starts with every node of the shared source running."""
    try:
        yield
    finally:
        stopped = [node for node in cluster.nodes if not node.process.is_running()]
        for node in stopped:
            node.process.start()
        if stopped:
            cluster.wait_ready(90)


@pytest.mark.parametrize("frozen", [False, True], ids=["running", "frozen"])
def test_a_source_log_truncated_by_an_unclean_election_is_copied_again_from_where_it_diverged(
    source: KafkaCluster, cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path, frozen: bool
) -> None:
    topic = f"truncated-{'frozen-' if frozen else ''}{unique}"
    targets = {"A": cluster_a.client_properties(), "B": cluster_b.client_properties()}
    remote = f"TR.{topic}"
    admin = confluent_admin(source.client_properties())
    config = {"unclean.leader.election.enable": "true", "min.insync.replicas": "1"}
    admin.create_topics([NewTopic(topic, 1, 2, config=config)])[topic].result(30)
    for target in targets.values():
        make_topic(target, remote)
    wait_until(lambda: _leader(source, topic) > 0, 30, "a leader")
    leader = _leader(source, topic)
    (follower,) = [node for node in _replicas(source, topic) if node != leader]
    first = [f"a-{i}".encode() for i in range(50)]
    lost = [f"b-{i}".encode() for i in range(30)]  # written to the leader alone: gone after the unclean election
    after = [f"c-{i}".encode() for i in range(40)]  # written by the new leader at offsets 50..89
    _write(source, topic, first, "all")
    flows = {flow: {"topics": topic, "strait.copy.batches": batches} for flow, batches in COPY_BATCHES.items()}
    clusters = {"TR": source, "A": cluster_a, "B": cluster_b}
    mm2 = write_mm2_config(tmp_path / "mm2.properties", clusters, flows)
    copied: dict[str, list[Rec]] = {}
    with _every_node_back(source), ServiceProcess("data_mirror", mm2, tmp_path, env=MIRROR_ENV) as mirror:
        for target in targets.values():
            consume_all(target, remote, expected=50, timeout_s=120)
        source.nodes[follower - 1].process.stop()
        _write(source, topic, lost, "1")
        for target in targets.values():
            consume_all(target, remote, expected=80, timeout_s=60)
        if frozen:
            time.sleep(1)  # the progress of 80 committed (commit interval 300 ms)
            mirror.freeze()
        source.nodes[leader - 1].process.stop()  # the partition is offline
        source.nodes[follower - 1].process.start()  # it comes back without b-*
        _elect_unclean(source, topic, follower)
        _write(source, topic, after, "all")
        source.nodes[leader - 1].process.start()  # the old leader truncates its log to the new one's and follows
        source.wait_ready(90)
        if frozen:
            mirror.thaw()
        for alias, target in targets.items():
            copied[alias] = consume_all(target, remote, expected=120, timeout_s=120)
        time.sleep(3)  # anything more (a second copy) would arrive within a few commit intervals
        assert mirror.stop() == 0
    held = [record.value for record in consume_to_end(source.client_properties(), topic)]
    assert held == first + after, "the source now holds a-* then c-*: b-* were truncated"
    for alias, target in targets.items():
        on_target = [record.value for record in consume_to_end(target, remote)]
        assert len(copied[alias]) == 120, alias
        assert on_target == first + lost + after, f"{alias}: b-* stay (they were copied), then each c-* once, in order"
