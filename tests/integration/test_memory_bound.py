"""The target stops answering for a minute (its broker frozen with SIGSTOP) while a backlog many times the target
producer's `buffer.memory` arrives on the source: the copy tasks stop fetching once that many bytes wait for the
target, so their processes' memory grows by about the bound, not by the backlog (48 partitions: a gate counting
batches per partition would hold several times the bound). When the target answers again, copying resumes by
itself and every record arrives, compared record by record."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from confluent_kafka import KafkaException, Producer

from shared.kafka.factories import confluent_producer
from shared.localkafka import KafkaCluster
from tests.support.kafka_io import end_offsets_sum, make_topic
from tests.support.mm2_config import write_mm2_config
from tests.support.service_process import ServiceProcess
from tests.support.verify_oracle import assert_nothing_lost
from tests.support.waiting import wait_until

pytestmark = pytest.mark.slow

MIB = 1 << 20
PARTITIONS = 48
VALUE_BYTES = 1024
RECORDS = 240_000  # about 240 MiB of values: fifteen times the bound
BOUND = 16 * MIB  # the target producer's buffer.memory in this test: per copy task
TASKS = 2
SLACK = 32 * MIB  # a fetch's bytes exist twice while parsed, requests in flight once more; the allocator keeps some
FREEZE_S = 60


@pytest.fixture(scope="module")
def freezable_target(kafka_runtime: str) -> Iterator[KafkaCluster]:
    """A target cluster of its own: freezing it must not disturb the clusters other tests share."""
    cluster = KafkaCluster("MEMB")
    try:
        yield cluster.start()
    finally:
        cluster.stop()


def _copy_workers_rss(root_pid: int) -> int:
    """Resident bytes of data-mirror's PySpark Python processes (the daemon and the workers running the tasks)."""
    total = 0
    for process in psutil.Process(root_pid).children(recursive=True):
        try:
            if "pyspark" in " ".join(process.cmdline()):
                total += process.memory_info().rss
        except psutil.Error:
            continue
    return total


def test_a_target_that_stops_answering_for_a_minute_holds_the_copy_within_its_byte_bound(
    cluster_a: KafkaCluster, freezable_target: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    topic = f"membound-{unique}"
    source, target = cluster_a.client_properties(), freezable_target.client_properties()
    remote = f"A.{topic}"
    make_topic(source, topic, PARTITIONS)
    make_topic(target, remote, PARTITIONS)
    config = write_mm2_config(
        tmp_path / "mm2.properties",
        {"A": cluster_a, "B": freezable_target},
        {"A->B": {"topics": topic, "strait.copy.batches": "on"}},
        extra={"B.producer.buffer.memory": str(BOUND)},
    )
    producer = confluent_producer(source, **{"linger.ms": 50, "batch.size": 262_144, "enable.idempotence": True})
    with ServiceProcess("data_mirror", config, tmp_path, env={"STRAIT_TASKS": str(TASKS)}) as mirror:
        assert mirror.popen is not None
        _produce(producer, topic, range(PARTITIONS))  # one record per partition: the tasks are up and copying
        wait_until(lambda: _copied(target, remote) >= PARTITIONS, 180, "the first records copied")
        idle = _copy_workers_rss(mirror.popen.pid)
        for node in freezable_target.nodes:
            node.process.send_signal(signal.SIGSTOP)
        try:
            until = time.monotonic() + FREEZE_S
            _produce(producer, topic, range(PARTITIONS, RECORDS))  # the backlog arrives while the target is frozen
            peak = idle
            while time.monotonic() < until:
                peak = max(peak, _copy_workers_rss(mirror.popen.pid))
                time.sleep(0.5)
        finally:
            for node in freezable_target.nodes:
                node.process.send_signal(signal.SIGCONT)
        wait_until(lambda: _copied(target, remote) >= RECORDS, 300, "every record copied")
        assert mirror.stop() == 0, mirror.tail()
    grew = peak - idle
    print(f"\ncopy workers: {idle / MIB:.0f} MiB copying, peak {peak / MIB:.0f} MiB while the target was frozen")
    assert grew < TASKS * BOUND + SLACK, f"the copy workers grew by {grew / MIB:.0f} MiB while the target was frozen"
    assert_nothing_lost(config, "A->B", topic, records=RECORDS)


def _copied(props: dict[str, str], topic: str) -> int:
    """Records on the remote topic so far; 0 while the new topic's partitions have no leader yet."""
    try:
        return end_offsets_sum(props, topic, PARTITIONS)
    except KafkaException:
        return 0


def _produce(producer: Producer, topic: str, numbers: range) -> None:
    """Records numbered `numbers`, spread over the partitions, all acknowledged."""
    for i in numbers:
        value = i.to_bytes(4, "big") * (VALUE_BYTES // 4)
        while True:
            try:
                producer.produce(topic, value, str(i).encode(), partition=i % PARTITIONS)
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                producer.poll(0.1)
    assert producer.flush(120) == 0
