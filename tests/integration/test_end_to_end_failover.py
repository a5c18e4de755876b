"""The whole product on real clusters: topic-sync, data-mirror, checkpoint and the translator as processes.

A consumer group reads part of a gap-free topic on A, fails over to B through the translator, and reads
the rest there: no record is missing and none is read twice. The same the other way (B to A) with a Filter that
drops tombstones on the way, under the same services.
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx
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


# A flow each way under the same four services: A->B copies as it is, B->A drops tombstones on the way.
FILTERED = {"A->B": False, "B->A": True}


def test_failover_through_the_real_services_loses_nothing_and_repeats_nothing(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    """Filtered: one record in a hundred is a tombstone that a Filter drops on the way, 1234 (where the group
    stops on its source) among them; on the target the group reads each kept record after it once."""
    clusters = {"A": cluster_a, "B": cluster_b}
    total, stop_at = 3000, 1234
    topics = {flow: f"e2e-{flow[0].lower()}-{unique}" for flow in FILTERED}
    groups = {flow: f"billing-{flow[0].lower()}-{unique}" for flow in FILTERED}
    written: dict[str, list[bytes | None]] = {}
    flows: dict[str, dict[str, str]] = {}
    for flow, filtered in FILTERED.items():
        source = clusters[flow[0]].client_properties()
        make_topic(source, topics[flow], partitions=1)
        written[flow] = [None if filtered and i % 100 == 34 else f"r{i}".encode() for i in range(total)]
        produce(source, topics[flow], [(None, value) for value in written[flow]])
        flow_settings = {"topics": topics[flow], "groups": groups[flow], "emit.checkpoints.interval.seconds": "1"}
        flows[flow] = flow_settings | (DROP_TOMBSTONES if filtered else {})
    config = write_mm2_config(tmp_path / "mm2.properties", clusters, flows)
    before = {
        flow: _read(clusters[flow[0]].client_properties(), topics[flow], groups[flow], stop_at, partitions=1)
        for flow in FILTERED
    }
    port = free_port()
    services = [
        ServiceProcess("topic_sync", config, tmp_path),
        ServiceProcess("data_mirror", config, tmp_path),
        ServiceProcess("checkpoint", config, tmp_path),
        ServiceProcess("offset_translator", config, tmp_path, "--port", str(port)),
    ]
    after: dict[str, list[bytes]] = {}
    try:
        for service in services:
            service.start()
        deadline = time.monotonic() + 240
        with httpx.Client(timeout=10) as client:
            for flow in FILTERED:
                url = f"http://127.0.0.1:{port}/v1/flows/{flow[0]}/{flow[-1]}"
                _fail_over(client, url, groups[flow], deadline)
        for flow in FILTERED:
            kept_after = [value for value in written[flow][stop_at:] if value is not None]
            target = clusters[flow[-1]].client_properties()
            remote = f"{flow[0]}.{topics[flow]}"
            after[flow] = _read(target, remote, groups[flow], len(kept_after), partitions=1)
    finally:
        for service in services:
            service.kill()
    for flow in FILTERED:
        kept = [value for value in written[flow] if value is not None]
        assert [value for value in before[flow] if value] + after[flow] == kept, flow


def _fail_over(client: httpx.Client, url: str, group: str, deadline: float) -> None:
    """Once the translator has offsets for `group`, fail it over (the translator commits them on the target)."""
    offsets: dict[str, object] = {}
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
    assert offsets, f"no translated offsets for {group} at {url} within 240 s"
    result = client.post(f"{url}/failover", json={"group": group})
    assert result.status_code == 200, result.text
