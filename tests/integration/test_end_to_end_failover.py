"""The whole product on real clusters: topic-sync, data-mirror, checkpoint and the translator as processes.

A consumer group reads part of a gap-free topic on A, fails over to B through the translator, and reads
the rest there: no record is missing and none is read twice.
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from confluent_kafka import TopicPartition

from shared.kafka.factories import confluent_consumer
from shared.localkafka import KafkaCluster
from shared.localkafka.ports import free_port
from tests.support.kafka_io import make_topic, produce
from tests.support.mm2_config import write_mm2_config
from tests.support.service_process import ServiceProcess


def _read(props: dict[str, str], topic: str, group: str, count: int, partitions: int) -> list[bytes]:
    """Consume exactly `count` records with `group` from its committed offsets (or the start), then commit."""
    consumer = confluent_consumer(
        props, **{"group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False}
    )
    consumer.subscribe([topic])
    values: list[bytes] = []
    deadline = time.monotonic() + 90
    try:
        while len(values) < count and time.monotonic() < deadline:
            for message in consumer.consume(num_messages=count - len(values), timeout=0.5):
                if message.error() is None:
                    values.append(message.value() or b"")
        assert len(values) == count, f"read {len(values)} of {count} records of {topic}"
        consumer.commit(asynchronous=False)
        assert len(consumer.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=10)) == partitions
    finally:
        consumer.close()
    return values


DROP_TOMBSTONES = {
    "transforms": "dropTombstones",
    "transforms.dropTombstones.type": "org.apache.kafka.connect.transforms.Filter",
    "transforms.dropTombstones.predicate": "isTombstone",
    "predicates": "isTombstone",
    "predicates.isTombstone.type": "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone",
}


@pytest.mark.parametrize("filtered", [False, True], ids=["plain", "tombstones-filtered"])
def test_failover_through_the_real_services_loses_nothing_and_repeats_nothing(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path, filtered: bool
) -> None:
    """Filtered: one record in a hundred is a tombstone that a Filter drops on the way, 1234 (where the group
    stops on A) among them; on B the group reads each kept record after it once."""
    topic, group, total = f"e2e-{unique}", f"billing-{unique}", 3000
    make_topic(cluster_a.client_properties(), topic, partitions=1)
    written = [None if filtered and i % 100 == 34 else f"r{i}".encode() for i in range(total)]
    produce(cluster_a.client_properties(), topic, [(None, value) for value in written])
    flow = {"topics": topic, "groups": group, "emit.checkpoints.interval.seconds": "1"}
    chain = DROP_TOMBSTONES if filtered else {}
    config = write_mm2_config(tmp_path / "mm2.properties", {"A": cluster_a, "B": cluster_b}, {"A->B": flow | chain})
    before = _read(cluster_a.client_properties(), topic, group, 1234, partitions=1)
    port = free_port()
    services = [
        ServiceProcess("topic_sync", config, tmp_path),
        ServiceProcess("data_mirror", config, tmp_path),
        ServiceProcess("checkpoint", config, tmp_path),
        ServiceProcess("offset_translator", config, tmp_path, "--port", str(port)),
    ]
    try:
        for service in services:
            service.start()
        url = f"http://127.0.0.1:{port}/v1/flows/A/B"
        deadline = time.monotonic() + 240
        offsets: dict[str, object] = {}
        with httpx.Client(timeout=10) as client:
            while time.monotonic() < deadline:
                try:
                    answer = client.get(f"{url}/offsets", params={"group": group})
                except httpx.TransportError:
                    answer = None
                if answer is not None and answer.status_code == 200:
                    offsets = answer.json()
                    if offsets:
                        break
                time.sleep(1)
            assert offsets, "no translated offsets for the group within 240 s"
            result = client.post(f"{url}/failover", json={"group": group})
            assert result.status_code == 200, result.text
        kept_after = [value for value in written[1234:] if value is not None]
        after = _read(cluster_b.client_properties(), f"A.{topic}", group, len(kept_after), partitions=1)
    finally:
        for service in services:
            service.kill()
    assert [value for value in before if value] + after == [value for value in written if value is not None]
