"""The whole disaster-recovery cycle on real brokers, with a producer and a consumer application running throughout.

A is the primary, B the DR site; A->B and B->A are both configured, under the default policy and under
IdentityReplicationPolicy with provenance headers. The link from A to data-mirror is narrow, so the copy lags a
burst written just before A's broker is killed (-9), which the consumer on A, fallen behind, has not read: an
unplanned failover goes on with what reached B and reports what it left behind. The applications move to B, the
producer writes there, A comes back (a restarted data-mirror copies nothing A->B meanwhile), `strait failback`
brings the applications back to A (B's records copied to A, A's un-mirrored tail reported, delivered or skipped),
and a planned failover moves them to B once more. The end compares what every producer wrote with what the serving
cluster holds and what the consumer read.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shared.control.topic_names import DR_TOPIC
from shared.kafka.factories import confluent_producer
from shared.kafka.topic_admin import TopicAdmin
from shared.localkafka import KafkaCluster
from shared.localkafka.cluster import running
from shared.localkafka.fault_proxy import FaultProxy
from shared.records.provenance import Provenance, provenance_of
from tests.support.dr_apps import ConsumerApp, ProducerApp, Read
from tests.support.kafka_io import Rec, end_offsets, make_topic, read_to_end
from tests.support.mm2_config import write_mm2_config
from tests.support.service_process import ServiceProcess
from tests.support.waiting import wait_until

pytestmark = pytest.mark.slow
TOPIC = "orders"
GROUP = "billing"
PARTITIONS = 3
IDENTITY = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
POLICIES: dict[str, dict[str, str]] = {
    "default": {},
    "identity": {"replication.policy.class": IDENTITY, "strait.provenance.enabled": "true"},
}
TAIL_CHOICE = {"default": "deliver", "identity": "skip"}
CAP_KIB_S = 48  # A -> data-mirror: the burst before the outage crosses it in tens of seconds
BURST_BEFORE_OUTAGE = 1_500  # records of 1 KiB, straight to A
QUIET_S = 2.0  # a producer counts as stopped this long after its last write


@pytest.fixture(scope="module", params=list(POLICIES))
def dr_pair(
    request: pytest.FixtureRequest, kafka_runtime: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, KafkaCluster, KafkaCluster]]:
    """A pair of its own per policy (A is killed and brought back), A behind the fault proxy for data-mirror."""
    policy = str(request.param)
    proxy = FaultProxy(tmp_path_factory.mktemp(f"dr-{policy}")).start()
    letter = policy[0].upper()
    try:
        with running(KafkaCluster(f"D{letter}A", proxy=proxy), KafkaCluster(f"D{letter}B", proxy=proxy)) as pair:
            yield policy, pair[0], pair[1]
    finally:
        proxy.stop()


def strait(*args: str) -> dict[str, Any]:
    """`strait ... --json` as an operator runs it; the JSON report it prints (a failure shows its stderr)."""
    done = subprocess.run(
        [sys.executable, "-m", "services.cli", *args, "--json"], capture_output=True, text=True, timeout=400
    )
    assert done.returncode == 0, f"strait {' '.join(args)} exited {done.returncode}: {done.stderr[-3000:]}"
    return dict(json.loads(done.stdout))


def remote(policy: str, source: str, topic: str = TOPIC) -> str:
    return topic if policy == "identity" else f"{source}.{topic}"


def origin(record: Rec, here: str, policy: str, topic: str) -> tuple[str, int, int]:
    """Where a record was first written: (cluster, partition, offset)."""
    raw = provenance_of(record.headers)
    if raw is not None:
        first = Provenance.decode(raw)
        return first.cluster, first.partition, first.offset
    if policy == "default" and topic != TOPIC:
        return topic.split(".")[0], record.partition, -1  # a remote topic: copied from its prefix's cluster
    return here, record.partition, record.offset


def written(clusters: dict[str, KafkaCluster], policy: str) -> dict[bytes, tuple[str, int, int]]:
    """Every value a producer wrote, with where it was first written, from the clusters' own logs."""
    found: dict[bytes, tuple[str, int, int]] = {}
    for alias, cluster in clusters.items():
        for record in read_to_end(cluster.client_properties(), TOPIC):
            where = origin(record, alias, policy, TOPIC)
            if where[0] == alias:
                found[record.value or b""] = where
    return found


def values_on(cluster: KafkaCluster, topics: list[str]) -> list[bytes]:
    return [r.value or b"" for topic in topics for r in read_to_end(cluster.client_properties(), topic)]


def test_fail_over_fail_back_and_fail_over_again_loses_nothing(
    dr_pair: tuple[str, KafkaCluster, KafkaCluster], tmp_path: Path
) -> None:
    policy, a, b = dr_pair
    clusters = {"A": a, "B": b}
    settings = {
        "topics": TOPIC,
        "groups": GROUP,
        "emit.checkpoints.interval.seconds": "1",
        "refresh.topics.interval.seconds": "1",
        "sync.topic.acls.enabled": "false",
        "consumer.max.partition.fetch.bytes": "16384",
        **POLICIES[policy],
    }
    flows = {"A->B": settings, "B->A": settings}
    direct = write_mm2_config(tmp_path / "direct.properties", clusters, flows)
    behind = write_mm2_config(tmp_path / "proxied.properties", {"A": a.via_proxy(), "B": b}, flows)
    for cluster in (a, b):
        make_topic(cluster.client_properties(), TOPIC, partitions=PARTITIONS)
    if policy == "default":
        make_topic(b.client_properties(), "A.orders", partitions=PARTITIONS)
        make_topic(a.client_properties(), "B.orders", partitions=PARTITIONS)
    topics_on = {"A": [TOPIC, remote(policy, "B")], "B": [remote(policy, "A"), TOPIC]}
    topics_on = {alias: sorted(set(names)) for alias, names in topics_on.items()}
    env = {"STRAIT_COMMIT_INTERVAL_MS": "500"}
    services = [ServiceProcess(name, direct, tmp_path) for name in ("topic_sync", "checkpoint")]
    mirror = ServiceProcess("data_mirror", behind, tmp_path, env=env)
    producer = ProducerApp("A", a.client_properties(), TOPIC)
    consumer = ConsumerApp("A", a.client_properties(), GROUP, topics_on["A"])
    reads: list[Read] = []
    try:
        for service in (*services, mirror):
            service.start()
        producer.start()
        consumer.start()
        wait_until(lambda: len(consumer.reads) >= 600, 180, "the consumer reads on A")
        wait_until(lambda: sum(end_offsets(b.client_properties(), remote(policy, "A"))) >= 600, 180, "copy to B")

        # The outage: A's link to the mirror narrows, a burst lands on A, A's broker dies while the copy lags.
        producer.hold()
        wait_until(lambda: _caught_up(a, b, policy), 120, "the copy to catch up before the outage")
        # The consumer falls behind (it leaves, committing): the burst is A's records nobody read, the tail a
        # failback delivers. A group that had read them on A keeps its position there (failback never rewinds).
        time.sleep(QUIET_S)
        consumer.stop()
        reads += consumer.reads
        a.network.bandwidth(CAP_KIB_S)
        write_in_small_batches(a, [f"b{i:05d}".encode() for i in range(BURST_BEFORE_OUTAGE)])
        time.sleep(6)  # the mirror's fetches since the burst know its end
        a_end_at_outage = end_offsets(a.client_properties(), TOPIC)
        copied_at_outage = end_offsets(b.client_properties(), remote(policy, "A"))
        a.nodes[0].process.kill()

        # Unplanned failover, after a dry run that must change nothing.
        before = _state(b)
        plan = strait("failover", "--flow", "A->B", "--config", str(direct), "--dry-run")
        assert plan["dry_run"] is True
        assert plan["planned"] is False
        assert _state(b) == before, "the dry run changed something"
        report = strait("failover", "--flow", "A->B", "--config", str(direct))
        assert report["planned"] is False
        assert not report["dry_run"]
        points = {(p["topic"], p["partition"]): p for p in report["points"]}
        rpo_records = report["rpo"]["records"]
        assert rpo_records > 0, (
            f"the copy did not lag the burst: {report['rpo']}; A's ends {a_end_at_outage}, B's then "
            f"{copied_at_outage}, points {report['points']}"
        )
        a.network.heal()
        moved = {m["group"] for m in report["groups_moved"]}
        assert GROUP in moved, report

        # The applications on B.
        consumer = ConsumerApp("B", b.client_properties(), GROUP, topics_on["B"]).start()
        producer.move("B", b.client_properties())
        wait_until(lambda: _read_all_copied(consumer, b, policy, points), 180, "the consumer reads what reached B")
        wait_until(lambda: sum(1 for r in consumer.reads if r.value.startswith(b"v")) > 200, 120, "reads on B")

        # A comes back; a restarted data-mirror copies nothing A->B.
        a.nodes[0].process.start()
        a.wait_ready()
        assert mirror.stop() == 0, mirror.tail()
        mirror = ServiceProcess("data_mirror", behind, tmp_path, env=env).start()
        copied_from_a = _from_a_on_b(b, policy)
        time.sleep(15)
        assert _from_a_on_b(b, policy) == copied_from_a, "data-mirror copied A->B after the failover"

        # Failback: the producer stops on B, the consumer leaves B.
        producer.hold()
        time.sleep(QUIET_S + 1)
        consumer.stop()
        reads += consumer.reads
        on_b_before_failback = list(consumer.reads)
        written_on_b = {v for v, where in producer.acked.items() if where == "B"}
        tail_choice = TAIL_CHOICE[policy]
        common = ("--flow", "A->B", "--config", str(direct), "--producers-quiet", str(QUIET_S), "--timeout", "180")
        offsets_on_a = _group_offsets(a)
        plan = strait("failback", *common, "--tail", tail_choice, "--dry-run")
        assert plan["dry_run"] is True
        assert _group_offsets(a) == offsets_on_a, "the failback's dry run moved a group"
        back = strait("failback", *common, "--tail", tail_choice)
        assert not back["dry_run"]
        assert [m["group"] for m in back["groups_moved"]] == [m["group"] for m in plan["groups_moved"]]
        tail = {(t["topic"], t["partition"]): (t["first"], t["end"]) for t in back["tail"]}
        for (topic, partition), point in points.items():
            end = a_end_at_outage[partition]
            expected = [(point["source_offset"], end)] if end > point["source_offset"] else []
            got = [tail[(topic, partition)]] if (topic, partition) in tail else []
            assert got == expected, f"{topic}-{partition}: tail {got}, expected {expected}"
        assert sum(e - f for f, e in tail.values()) == rpo_records, "the failover's RPO is not the tail found"
        assert back["copied_back"] == len(written_on_b), "failback copied something other than B's new records"
        # The consumer on B saw every record A's copy gave it, and none of the tail.
        seen_from_a = {(r.partition, r.offset) for r in on_b_before_failback if r.topic == remote(policy, "A")}
        tail_offsets = {(p, o) for (_, p), (f, e) in tail.items() for o in range(f, e)}
        assert not tail_offsets & _a_offsets_seen(on_b_before_failback, b, policy), "the consumer on B saw the tail"
        assert seen_from_a, "the consumer read nothing copied from A on B"

        # Back on A.
        consumer = ConsumerApp("A", a.client_properties(), GROUP, topics_on["A"]).start()
        producer.move("A", a.client_properties())
        tail_values = _values_at(a, tail)
        if tail_choice == "deliver":
            wait_until(
                lambda: tail_values <= {r.value for r in consumer.reads},
                180,
                "the tail delivered on A",
                lambda: (
                    f"{len(tail_values - {r.value for r in consumer.reads})} of {len(tail_values)} tail records "
                    f"unread; tail {tail}; group on A {_group_offsets(a)}; failback moved {back['groups_moved']}; "
                    f"first reads {[(r.topic, r.partition, r.offset) for r in consumer.reads[:6]]}"
                ),
            )
        wait_until(lambda: sum(1 for r in consumer.reads if r.value.startswith(b"v")) > 200, 120, "reads on A")

        # A planned failover: the producer stops, the consumer leaves A, nothing is left behind.
        producer.hold()
        time.sleep(QUIET_S + 1)
        consumer.stop()
        reads += consumer.reads
        read_before = {r.value for r in reads}
        if tail_choice == "skip":
            assert not tail_values & {r.value for r in consumer.reads}, "the skipped tail was read on A"
        planned = strait("failover", *common, "--planned")
        assert planned["planned"] is True
        assert planned["rpo"]["records"] == 0, planned["rpo"]
        consumer = ConsumerApp("B", b.client_properties(), GROUP, topics_on["B"]).start()
        producer.move("B", b.client_properties())
        time.sleep(8)
        producer.hold()
        last = written(clusters, policy)
        wanted = set(last) - (tail_values if tail_choice == "skip" else set())
        wait_until(lambda: wanted <= set(reads_values(reads, consumer)), 180, "every record read")
        consumer.stop()
        after = [r.value for r in consumer.reads]
        twice = set(after) & read_before
        assert not twice, (
            f"the consumer read records twice across the planned failover: {_where_read(twice, reads, consumer)}; "
            f"moved {planned['groups_moved']}"
        )
        reads += consumer.reads
    finally:
        producer.stop()
        consumer.stop(cluster_gone=True)
        for service in (*services, mirror):
            if service.popen is not None and service.popen.poll() is None:
                service.kill()  # whatever failed is what the test reports; the services only have to go

    # Every record any producer wrote is on B, the cluster that serves it now, and was read at least once.
    final = written(clusters, policy)
    on_b = set(values_on(b, topics_on["B"]))
    assert set(final) <= on_b, f"{len(set(final) - on_b)} written records are not on B"
    unread = set(final) - {r.value for r in reads} - (tail_values if tail_choice == "skip" else set())
    assert not unread, f"{len(unread)} written records were never read (first: {sorted(unread)[:3]})"
    assert set(producer.acked) <= set(final), "an acknowledged record is on neither cluster"


def _where_read(values: set[bytes], reads: list[Read], consumer: ConsumerApp) -> str:
    """Where some of `values` were read before and after, in which cluster, topic, partition and offset."""
    sample = sorted(values)[:3]
    before = [(r.cluster, r.topic, r.partition, r.offset, r.value[:6]) for r in reads if r.value in sample]
    after = [(r.cluster, r.topic, r.partition, r.offset, r.value[:6]) for r in consumer.reads if r.value in sample]
    return f"{len(values)} values; before {before}; after {after}"


def _caught_up(a: KafkaCluster, b: KafkaCluster, policy: str) -> bool:
    return end_offsets(b.client_properties(), remote(policy, "A")) >= end_offsets(a.client_properties(), TOPIC)


def write_in_small_batches(cluster: KafkaCluster, keys: list[bytes]) -> None:
    """Records of 1 KiB in batches of a few (a fetch of 16 KiB brings a batch whole, however large)."""
    producer = confluent_producer(cluster.client_properties(), **{"batch.size": 4096, "linger.ms": 2, "acks": "all"})
    for key in keys:
        producer.produce(TOPIC, key.ljust(1024, b"."), key=key)
        producer.poll(0)
    assert producer.flush(30) == 0, "the burst was not written"


def reads_values(reads: list[Read], consumer: ConsumerApp) -> list[bytes]:
    return [r.value for r in reads] + [r.value for r in consumer.reads]


def _state(b: KafkaCluster) -> tuple[Any, ...]:
    """What a dry run must not change: B's group offsets, its DR records and its topics (the copy itself may still
    be landing what it fetched before A died)."""
    topics = TopicAdmin(b.name, b.client_properties(), timeout_s=10).partition_counts()
    dr_records = [(r.key, r.value) for r in read_to_end(b.client_properties(), DR_TOPIC)] if DR_TOPIC in topics else []
    return _group_offsets(b), dr_records, topics


def _group_offsets(cluster: KafkaCluster) -> dict[tuple[str, int], int]:
    from shared.kafka.group_offsets import GroupAdmin

    offsets, errors = GroupAdmin.connect(cluster.name, cluster.client_properties(), timeout_s=30).committed_offsets(
        [GROUP]
    )
    assert not errors, errors
    return {key: entry.offset for key, entry in offsets.get(GROUP, {}).items()}


def _from_a_on_b(b: KafkaCluster, policy: str) -> int:
    """How many records B holds that were first written on A."""
    return sum(
        1
        for topic in {remote(policy, "A")}
        for r in read_to_end(b.client_properties(), topic)
        if origin(r, "B", policy, topic)[0] == "A"
    )


def _a_offsets_seen(reads: list[Read], b: KafkaCluster, policy: str) -> set[tuple[int, int]]:
    """The A (partition, offset) of every record copied from A that the consumer read on B."""
    topic = remote(policy, "A")
    by_place = {(r.partition, r.offset): r for r in read_to_end(b.client_properties(), topic)}
    seen = set()
    for read in reads:
        record = by_place.get((read.partition, read.offset))
        if read.topic != topic or record is None:
            continue
        cluster, partition, offset = origin(record, "B", policy, topic)
        if cluster == "A" and offset >= 0:
            seen.add((partition, offset))
        elif cluster == "A":
            seen.add((partition, read.offset))  # default policy: the copy's offset is the source's (gap-free)
    return seen


def _read_all_copied(consumer: ConsumerApp, b: KafkaCluster, policy: str, points: dict[Any, Any]) -> bool:
    """The consumer on B read every record copied from A (up to each failover point's target offset)."""
    topic = remote(policy, "A")
    last = {p: -1 for p in range(PARTITIONS)}
    for read in consumer.reads:
        if read.topic == topic:
            last[read.partition] = max(last[read.partition], read.offset)
    return all(last[p["partition"]] >= p["target_offset"] - 1 for p in points.values())


def _values_at(a: KafkaCluster, tail: dict[tuple[str, int], tuple[int, int]]) -> set[bytes]:
    wanted = {(p, o) for (_, p), (f, e) in tail.items() for o in range(f, e)}
    return {r.value or b"" for r in read_to_end(a.client_properties(), TOPIC) if (r.partition, r.offset) in wanted}
