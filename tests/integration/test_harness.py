"""The harness starts real KRaft clusters that clients can use, secure ones included, and cleans up."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from confluent_kafka import KafkaException

from shared.kafka.factories import aio_consumer, aio_producer, confluent_admin
from shared.localkafka import KafkaCluster
from tests.integration.conftest import MIRROR_USER
from tests.support.kafka_io import consume_all, make_topic, produce


def test_records_flow_through_both_clusters(cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str) -> None:
    for cluster in (cluster_a, cluster_b):
        topic = f"harness-{cluster.name}-{unique}"
        make_topic(cluster.client_properties(), topic, partitions=3)
        payload = [(f"k{i}".encode(), f"v{i}".encode()) for i in range(300)]
        produce(cluster.client_properties(), topic, payload, headers=[("h", b"\x00\x01")])
        got = consume_all(cluster.client_properties(), topic, expected=300)
        assert sorted(r.value or b"" for r in got) == sorted(v for _, v in payload)
        assert all(r.headers == [("h", b"\x00\x01")] for r in got)
    assert cluster_a.bootstrap_servers != cluster_b.bootstrap_servers


async def test_aiokafka_works_against_the_pinned_release(cluster_a: KafkaCluster, unique: str) -> None:
    topic = f"aio-{unique}"
    props = cluster_a.client_properties()
    make_topic(props, topic)
    producer = aio_producer(props, enable_idempotence=True)
    await producer.start()
    try:
        for i in range(20):
            await producer.send_and_wait(topic, f"m{i}".encode(), headers=[("n", str(i).encode())])
    finally:
        await producer.stop()
    consumer = aio_consumer(props, topic, group_id=f"g-{unique}", auto_offset_reset="earliest")
    await consumer.start()
    try:
        seen: list[bytes] = []
        async with asyncio.timeout(30):
            while len(seen) < 20:
                batch = await consumer.getmany(timeout_ms=500)
                seen.extend(msg.value for msgs in batch.values() for msg in msgs)
    finally:
        await consumer.stop()
    assert seen == [f"m{i}".encode() for i in range(20)]


def test_secure_cluster_authenticates_and_authorizes(secure_cluster: KafkaCluster, unique: str) -> None:
    topic = f"secure-{unique}"
    admin_props = secure_cluster.client_properties()
    make_topic(admin_props, topic)
    produce(admin_props, topic, [(b"k", b"v")])
    assert [r.value for r in consume_all(admin_props, topic, expected=1)] == [b"v"]

    # The mirror user authenticates but holds no ACL: the authorizer refuses it.
    mirror_props = secure_cluster.client_properties(MIRROR_USER)
    with pytest.raises(AssertionError, match=r"TOPIC_AUTHORIZATION_FAILED|not delivered"):
        produce(mirror_props, topic, [(b"k", b"denied")])

    # A wrong password does not get in at all.
    wrong = dict(
        mirror_props, **{"sasl.jaas.config": mirror_props["sasl.jaas.config"].replace(MIRROR_USER.password, "nope")}
    )
    with pytest.raises(KafkaException):
        confluent_admin(wrong, **{"socket.timeout.ms": 3000}).list_topics(timeout=5)

    # Plaintext clients are not accepted on the SASL listener.
    plain = {"bootstrap.servers": secure_cluster.bootstrap_servers}
    with pytest.raises(KafkaException):
        confluent_admin(plain).list_topics(timeout=3)


def test_three_broker_cluster_survives_a_broker_restart(three_broker_cluster: KafkaCluster, unique: str) -> None:
    props = three_broker_cluster.client_properties()
    topic = f"replicated-{unique}"
    from shared.kafka.topics import create_topic

    create_topic(
        confluent_admin(props), topic, partitions=3, replication_factor=3, configs={"min.insync.replicas": "2"}
    )
    produce(props, topic, [(None, f"before-{i}".encode()) for i in range(100)])
    three_broker_cluster.restart_node(1)
    produce(props, topic, [(None, f"after-{i}".encode()) for i in range(100)])
    got = consume_all(props, topic, expected=200)
    assert len(got) == 200
    assert len(confluent_admin(props).list_topics(timeout=10).brokers) == 3


def test_brokers_die_with_a_killed_parent(kafka_runtime: str, tmp_path: object) -> None:
    """Even kill -9 of the process that started a cluster leaves no JVM behind."""
    script = textwrap.dedent(
        """
        import sys, time
        from shared.localkafka import KafkaCluster
        cluster = KafkaCluster("orphan").start()
        print(",".join(str(n.process.pid) for n in cluster.nodes), flush=True)
        time.sleep(600)
        """
    )
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=os.getcwd())
    assert child.stdout is not None
    pids = [int(p) for p in child.stdout.readline().strip().split(",")]
    assert pids
    assert all(_alive(pid) for pid in pids)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=10)
    child.stdout.close()
    deadline = time.monotonic() + 20
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(_alive(pid) for pid in pids), "a broker JVM outlived its killed parent"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().split(") ", 1)[1][0] != "Z"
