"""No Strait client creates a topic by accident, on brokers that auto-create topics as Apache Kafka's defaults do.

Every client `shared.kafka` builds asks for a missing topic's metadata, and the topic is still missing afterwards;
a mirrored topic deleted on the source stays deleted while data-mirror runs (it once came back with one partition,
made by the batch link's metadata requests).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from aiokafka.errors import KafkaError as AioKafkaError
from aiokafka.structs import TopicPartition as AioTopicPartition
from confluent_kafka import TopicPartition

from shared.kafka.factories import (
    aio_client,
    aio_consumer,
    aio_producer,
    confluent_admin,
    confluent_consumer,
    confluent_producer,
)
from shared.localkafka import KafkaCluster
from tests.support.kafka_io import consume_all, delete_topic, make_topic, produce
from tests.support.mm2_config import write_mm2_config
from tests.support.service_process import ServiceProcess


@pytest.fixture(scope="module")
def auto_creating_pair(kafka_runtime: str) -> Iterator[tuple[KafkaCluster, KafkaCluster]]:
    """Two clusters whose brokers create a topic a client asks for, as Apache Kafka's defaults do."""
    clusters = tuple(KafkaCluster(name, broker_overrides={"auto.create.topics.enable": "true"}) for name in "AB")
    try:
        for cluster in clusters:
            cluster.launch()
        for cluster in clusters:
            cluster.wait_ready()
        yield clusters[0], clusters[1]
    finally:
        for cluster in clusters:
            cluster.stop()


def _topics(cluster: KafkaCluster) -> set[str]:
    """The cluster's topics, asked without naming one (a request naming a topic could create it)."""
    return set(confluent_admin(cluster.client_properties()).list_topics(timeout=10).topics)


def _confluent_producer(props: dict[str, str], topic: str) -> None:
    producer = confluent_producer(props, **{"message.timeout.ms": 3000})
    producer.produce(topic, b"x")
    producer.flush(5)


def _confluent_consumer(props: dict[str, str], topic: str) -> None:
    consumer = confluent_consumer(props, **{"group.id": f"g-{topic}", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        consumer.consume(10, 0.2)
    consumer.close()


def _aio_producer(props: dict[str, str], topic: str) -> None:
    async def run() -> None:
        producer = aio_producer(props, request_timeout_ms=3000)
        await producer.start()
        try:
            await asyncio.wait_for(producer.send_and_wait(topic, b"x"), 5)
        except (AioKafkaError, TimeoutError):
            pass  # no such topic: refused, as it should be
        finally:
            await producer.stop()

    asyncio.run(run())


def _aio_consumer(props: dict[str, str], topic: str) -> None:
    async def run() -> None:
        consumer = aio_consumer(props, enable_auto_commit=False)
        await consumer.start()
        try:
            consumer.assign([AioTopicPartition(topic, 0)])
            await consumer.getmany(timeout_ms=2000)
        except AioKafkaError:
            pass
        finally:
            await consumer.stop()

    asyncio.run(run())


def _aio_client(props: dict[str, str], topic: str) -> None:
    """The bare protocol client batch forwarding fetches and produces with."""

    async def run() -> None:
        client = aio_client(props)
        await client.bootstrap()
        try:
            await client.set_topics([topic])
            await client.force_metadata_update()
        finally:
            await client.close()

    asyncio.run(run())


CLIENTS: dict[str, Callable[[dict[str, str], str], None]] = {
    "confluent-producer": _confluent_producer,
    "confluent-consumer": _confluent_consumer,
    "aiokafka-producer": _aio_producer,
    "aiokafka-consumer": _aio_consumer,
    "aiokafka-client": _aio_client,
}


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_a_client_asking_for_a_missing_topic_does_not_create_it(
    auto_creating_pair: tuple[KafkaCluster, KafkaCluster], unique: str, client: str
) -> None:
    cluster = auto_creating_pair[0]
    topic = f"missing-{client}-{unique}"
    CLIENTS[client](cluster.client_properties(), topic)
    time.sleep(1)  # a broker creates an auto-created topic at once; give it a moment to show in metadata
    assert topic not in _topics(cluster), f"{client} made the broker create {topic}"


def test_a_mirrored_topic_deleted_on_the_source_stays_deleted(
    auto_creating_pair: tuple[KafkaCluster, KafkaCluster], unique: str, tmp_path: Path
) -> None:
    a, b = auto_creating_pair
    topic = f"orders-{unique}"
    make_topic(a.client_properties(), topic, partitions=3)
    make_topic(b.client_properties(), f"A.{topic}", partitions=3)
    source = [(f"k{i}".encode(), f"v{i}".encode()) for i in range(300)]
    produce(a.client_properties(), topic, source)
    config = write_mm2_config(tmp_path / "mm2.properties", {"A": a, "B": b}, {"A->B": {"topics": topic}})
    with ServiceProcess("data_mirror", config, tmp_path, env={"STRAIT_COMMIT_INTERVAL_MS": "300"}) as mirror:
        target = consume_all(b.client_properties(), f"A.{topic}", expected=len(source), timeout_s=120)
        assert sorted((r.key, r.value) for r in target) == sorted(source)
        delete_topic(a.client_properties(), topic)
        mirror.wait_for_log("source_topic_gone", 60, topic=topic)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # the copy tasks and the driver keep running meanwhile
            assert topic not in _topics(a), "the deleted source topic was created again"
            time.sleep(1)
        assert mirror.stop() == 0
    assert topic not in _topics(a)
