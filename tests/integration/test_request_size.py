"""A target broker that accepts small requests only (`socket.request.max.bytes`, 10 MiB here) and a backlog of 1 MiB
batches on 24 partitions: every record arrives. One Produce request per leader for every partition's next batch
would be 24 MiB: the broker closes the connection instead of answering (and logs "Invalid receive"), the request is
built again after the reconnect, and the partitions catch up only by luck, minutes later. Requests are split at the
target producer's `max.request.size` (8 MiB here; Kafka's default, 1 MiB, when not set): the broker refuses none."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from shared.kafka.factories import confluent_producer
from shared.localkafka import KafkaCluster
from tests.support.kafka_io import end_offsets_sum, make_topic
from tests.support.mm2_config import write_mm2_config
from tests.support.service_process import ServiceProcess
from tests.support.verify_oracle import assert_nothing_lost
from tests.support.waiting import wait_until

PARTITIONS = 24
BATCHES_PER_PARTITION = 3
VALUE_BYTES = 8 * 1024
RECORDS_PER_BATCH = 110  # about 0.9 MiB a batch: under the target topic's default max.message.bytes (1 MiB)


@pytest.fixture(scope="module")
def small_request_target(kafka_runtime: str) -> Iterator[KafkaCluster]:
    """A target broker whose socket.request.max.bytes is 10 MiB (the default is 100 MiB)."""
    cluster = KafkaCluster("B", broker_overrides={"socket.request.max.bytes": str(10 << 20)})
    try:
        cluster.launch()
        cluster.wait_ready()
        yield cluster
    finally:
        cluster.stop()


def test_a_backlog_of_big_batches_reaches_a_target_that_takes_10_mib_requests_only(
    cluster_a: KafkaCluster, small_request_target: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    topic = f"bigreq-{unique}"
    source, target = cluster_a.client_properties(), small_request_target.client_properties()
    make_topic(source, topic, PARTITIONS)
    make_topic(target, f"A.{topic}", PARTITIONS)
    producer = confluent_producer(
        source, **{"linger.ms": 500, "batch.size": 1_000_000, "compression.type": "none", "enable.idempotence": True}
    )
    per_partition = BATCHES_PER_PARTITION * RECORDS_PER_BATCH
    for i in range(per_partition):
        for partition in range(PARTITIONS):
            producer.produce(topic, bytes([i % 251]) * VALUE_BYTES, f"{partition}:{i}".encode(), partition=partition)
        producer.poll(0)
    assert producer.flush(60) == 0
    total = PARTITIONS * per_partition
    flow = {"topics": topic, "strait.copy.batches": "on"}
    config = write_mm2_config(
        tmp_path / "mm2.properties",
        {"A": cluster_a, "B": small_request_target},
        {"A->B": flow},
        extra={"B.producer.max.request.size": str(8 << 20)},
    )
    with ServiceProcess("data_mirror", config, tmp_path, env={"STRAIT_COMMIT_INTERVAL_MS": "300"}) as mirror:
        mirror.wait_for_log("batches_forwarded", 180, topic=topic)
        wait_until(lambda: end_offsets_sum(target, f"A.{topic}", PARTITIONS) >= total, 240, "every record copied")
        assert mirror.stop() == 0, mirror.tail()
    assert_nothing_lost(config, "A->B", topic, records=total)
    # The broker never had to refuse a request for its size (it logs each one it closes a connection over).
    broker_log = (small_request_target.workdir / "node-1" / "broker.log").read_text(errors="replace")
    refused = [line for line in broker_log.splitlines() if "Invalid receive" in line]
    assert not refused, refused[:3]
