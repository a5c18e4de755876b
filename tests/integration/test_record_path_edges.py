"""Edges of the record path on real brokers (issue 53: bugs fixed earlier with unit tests only).

- A header key that is not UTF-8 (Kafka allows any bytes; producers other than Java's write such keys): forwarding
  batches copies it byte for byte. Record by record (confluent-kafka cannot read nor write such a key) its partition
  stops at that record, reported with the reason, while the records before it and the other partitions copy; the
  task no longer dies (confluent-kafka hands back a half-built header list once the call site is warm, and the Spark
  worker crashed with a segmentation fault, failing the whole slot at every restart).
- A source partition without a leader (its only replica's broker stopped before data-mirror starts) is held on
  the source and reported so, while the slot's other partitions copy; once the broker is back it is copied too.
- A record that something other than the mirror wrote into a remote topic (split brain) is named unexpected by
  `strait verify`, with its target offset, and verify exits 4; the clean copy verified with exit 0 before.

One data-mirror serves the header key and the foreign record: A->B forwarding batches, B->A record by record.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from shared.kafka.factories import confluent_admin
from shared.localkafka import KafkaCluster
from tests.integration.test_cli import strait
from tests.support.byte_records import produce_batch, read_all
from tests.support.fidelity import HEADERS, assert_identical, fill_varied
from tests.support.kafka_io import consume_to_end, end_offsets, make_topic, produce
from tests.support.mirror_status import wait_for_blocked
from tests.support.mm2_config import write_mm2_config
from tests.support.progress import wait_for_progress
from tests.support.service_process import ServiceProcess
from tests.support.waiting import wait_until

MIRROR_ENV = {"STRAIT_COMMIT_INTERVAL_MS": "300", "STRAIT_STATUS_INTERVAL_S": "1"}
BASE_TS = int(time.time() * 1000) - 3_600_000  # an hour old: timestamps are the source's, not the copy's
PER_PARTITION = 30
PARTITIONS = 2
ODD_KEY = b"\xff\xfekey"  # not UTF-8


def _leaders(props: dict[str, str], topic: str) -> dict[int, int]:
    """partition -> its leader's node id (-1: none)."""
    partitions = confluent_admin(props).list_topics(topic, timeout=10).topics[topic].partitions
    return {partition: meta.leader for partition, meta in partitions.items()}


def test_a_leaderless_source_partition_is_held_while_the_others_copy_and_is_copied_once_its_broker_is_back(
    three_broker_cluster: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    source = three_broker_cluster
    s, b = source.client_properties(), cluster_b.client_properties()
    topic, partitions = f"leaderless-{unique}", 3
    remote = f"C3.{topic}"
    make_topic(s, topic, partitions=partitions)  # replication factor 1: each partition lives on one broker
    make_topic(b, remote, partitions=partitions)
    wait_until(lambda: min(_leaders(s, topic).values()) > 0, 30, f"leaders for {topic}")
    fill_varied(source, topic, partitions=partitions, per_partition=PER_PARTITION, start_ts=BASE_TS)
    leaders = _leaders(s, topic)
    down = leaders[0]
    held = sorted(p for p, leader in leaders.items() if leader == down)
    live = sorted(set(leaders) - set(held))
    assert live, f"every partition of {topic} is on broker {down}: {leaders}"
    broker = source.nodes[down - 1].process
    broker.stop()
    wait_until(lambda: all(_leaders(s, topic)[p] == -1 for p in held), 30, f"{topic}-{held} without a leader")

    config = write_mm2_config(tmp_path / "mm2.properties", {"C3": source, "B": cluster_b}, {"C3->B": {"topics": topic}})
    with ServiceProcess("data_mirror", config, tmp_path, env=MIRROR_ENV) as mirror:
        for partition in held:
            logged = mirror.wait_for_log("partition_held_on_source", timeout_s=120, topic=topic, partition=partition)
            assert "no leader" in logged["reason"], logged
            status, blocked = wait_for_blocked(b, "C3->B", topic, partition)
            assert status.state == "degraded", status
            assert blocked["offset"] == 0, blocked
        for partition in live:  # written while the partition has no leader
            produce(s, topic, [(b"late", f"after the stop {i}".encode()) for i in range(10)], partition=partition)
        copied = {p: PER_PARTITION + 10 for p in live} | {p: 0 for p in held}
        wait_until(
            lambda: dict(enumerate(end_offsets(b, remote))) == copied,
            120,
            f"the live partitions {live} copied while {held} has no leader",
            lambda: str(end_offsets(b, remote)),
        )

        broker.start()
        source.wait_ready(90)
        for partition in held:
            mirror.wait_for_log("partition_resumed", timeout_s=120, topic=topic, partition=partition)
        wait_until(
            lambda: end_offsets(b, remote) == end_offsets(s, topic),
            120,
            f"{remote} as long as {topic}",
            lambda: f"{end_offsets(b, remote)} != {end_offsets(s, topic)}",
        )
        assert mirror.stop() == 0, mirror.tail()
    assert_identical(consume_to_end(s, topic), consume_to_end(b, remote))


@dataclass(frozen=True)
class EdgeMirror:
    """The topics of the shared data-mirror run, its config and the process."""

    config: Path
    mirror: ServiceProcess
    batches_topic: str  # on A, copied to B forwarding batches; a record in partition 0 has ODD_KEY
    foreign_topic: str  # on A, copied to B; written into on B by another producer
    odd_offset: int  # the offset of the first record holding ODD_KEY, in partition 0
    records_topic: str  # on B, copied to A record by record; partition 0 holds ODD_KEY from `records_odd_offset`
    records_odd_offset: int


def _with_an_odd_header_key(cluster: KafkaCluster, topic: str) -> int:
    """PER_PARTITION varied records per partition, then in partition 0 one batch of three (the second and third with
    ODD_KEY among their headers) and three more records; the offset of the first record with ODD_KEY."""
    props = cluster.client_properties()
    make_topic(props, topic, partitions=PARTITIONS)
    fill_varied(cluster, topic, partitions=PARTITIONS, per_partition=PER_PARTITION, start_ts=BASE_TS)
    first = produce_batch(
        props,
        topic,
        0,
        [
            (BASE_TS + 100, b"before", b"plain keys", [("plain", b"1")]),
            (BASE_TS + 101, b"odd", b"an odd key", [("plain", b"2"), (ODD_KEY, b"\x00odd"), ("empty", None)]),
            (BASE_TS + 102, None, b"odd again", [(ODD_KEY, None)]),
        ],
    )
    produce(props, topic, [(f"k{i}".encode(), b"after") for i in range(3)], partition=0, headers=HEADERS)
    return first + 1


@pytest.fixture(scope="module")
def edge(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[EdgeMirror]:
    suffix = uuid.uuid4().hex[:8]
    batches, foreign, records = (f"edge-{suffix}-{name}" for name in ("batches", "foreign", "records"))
    a, b = cluster_a.client_properties(), cluster_b.client_properties()
    odd_offset = _with_an_odd_header_key(cluster_a, batches)
    records_odd_offset = _with_an_odd_header_key(cluster_b, records)
    make_topic(a, foreign, partitions=PARTITIONS)
    fill_varied(cluster_a, foreign, partitions=PARTITIONS, per_partition=PER_PARTITION, start_ts=BASE_TS)
    for remote in (f"A.{batches}", f"A.{foreign}"):
        make_topic(b, remote, partitions=PARTITIONS)  # topic-sync's job
    make_topic(a, f"B.{records}", partitions=PARTITIONS)
    tmp_path = tmp_path_factory.mktemp("edge")
    flows = {
        "A->B": {"topics": f"{batches},{foreign}"},
        "B->A": {"topics": records, "strait.copy.batches": "off"},
    }
    config = write_mm2_config(tmp_path / "mm2.properties", {"A": cluster_a, "B": cluster_b}, flows)
    env = MIRROR_ENV | {"STRAIT_BLOCKED_RETRY_S": "2"}  # the stopped partition tries its record again meanwhile
    with ServiceProcess("data_mirror", config, tmp_path, env=env) as mirror:
        yield EdgeMirror(config, mirror, batches, foreign, odd_offset, records, records_odd_offset)
        assert mirror.stop() == 0, mirror.tail()


def test_a_header_key_that_is_not_utf8_is_forwarded_intact_byte_for_byte(
    edge: EdgeMirror, cluster_a: KafkaCluster, cluster_b: KafkaCluster
) -> None:
    a, b = cluster_a.client_properties(), cluster_b.client_properties()
    odd = [r for r in read_all(a, edge.batches_topic) if any(name == ODD_KEY for name, _ in r.headers)]
    assert [r.offset for r in odd] == [edge.odd_offset, edge.odd_offset + 1]

    # Forwarding batches (at-least-once): every record arrives, the odd key's bytes with it.
    source = read_all(a, edge.batches_topic)
    remote = f"A.{edge.batches_topic}"
    wait_until(lambda: sum(end_offsets(b, remote)) >= len(source), 120, f"{len(source)} records in {remote}")
    assert_identical(source, read_all(b, remote))


def test_a_record_another_producer_wrote_into_the_remote_topic_is_unexpected_and_verify_exits_4(
    edge: EdgeMirror, cluster_a: KafkaCluster, cluster_b: KafkaCluster
) -> None:
    a, b = cluster_a.client_properties(), cluster_b.client_properties()
    topic, remote = edge.foreign_topic, f"A.{edge.foreign_topic}"
    for partition in range(PARTITIONS):
        wait_for_progress(b, "A", "A->B", topic, partition, PER_PARTITION)
    verify = ("verify", "--config", str(edge.config), "--flows", "A->B", "--topics", topic)

    clean = strait(*verify, "--json")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    totals = json.loads(clean.stdout)["flows"][0]["totals"]
    assert (totals["verified"], totals["lost"], totals["unexpected"]) == (PARTITIONS * PER_PARTITION, 0, 0), totals

    produce(
        b, remote, [(b"split", b"written on B by an application")], partition=1, headers=[("who", b"not the mirror")]
    )
    foreign = strait(*verify, "--json")
    assert foreign.returncode == 4, foreign.stdout + foreign.stderr
    flow = json.loads(foreign.stdout)["flows"][0]
    findings = {finding["partition"]: finding for finding in flow["partitions"]}
    assert (findings[1]["unexpected"], findings[1]["unexpected_offsets"]) == (1, [PER_PARTITION]), findings[1]
    assert (findings[0]["unexpected"], flow["totals"]["lost"], flow["totals"]["unexpected"]) == (0, 0, 1), flow
    table = strait(*verify)
    assert table.returncode == 4, table.stdout + table.stderr
    assert "UNEXPECTED" in table.stdout, table.stdout
    assert f"unexpected at target {PER_PARTITION}" in table.stdout, table.stdout

    copied = [r for r in consume_to_end(b, remote) if r.key != b"split"]
    assert_identical(consume_to_end(a, topic), copied)


def test_a_header_key_that_is_not_utf8_stops_only_its_partition_when_copied_record_by_record(
    edge: EdgeMirror, cluster_a: KafkaCluster, cluster_b: KafkaCluster
) -> None:
    a, b = cluster_a.client_properties(), cluster_b.client_properties()
    topic, remote, odd = edge.records_topic, f"B.{edge.records_topic}", edge.records_odd_offset
    status, blocked = wait_for_blocked(a, "B->A", topic, 0, timeout_s=120)
    assert blocked["offset"] == odd, blocked
    assert "not UTF-8" in blocked["reason"], blocked
    assert status.state == "degraded", status
    before = [r for r in read_all(b, topic) if r.partition == 1 or r.offset < odd]
    wait_until(lambda: sum(end_offsets(a, remote)) >= len(before), 120, f"{len(before)} records in {remote}")
    time.sleep(5)  # two retries of the stopped record (every 2 s): each stops the partition again
    assert_identical(before, read_all(a, remote))
    failures = [e for e in edge.mirror.logs() if e.get("event") == "mirror_error" and e.get("flow") == "B->A"]
    assert not failures, failures
    assert edge.mirror.popen is not None
    assert edge.mirror.popen.poll() is None, edge.mirror.tail()
