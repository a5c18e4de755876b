"""data-mirror on real clusters: records arrive byte-identical, nothing is lost across crashes, syncs are MM2's."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import psutil

from shared.control import CONTROL_TOPIC, STATUS_TOPIC, ServiceStatus, progress_topic, read_statuses
from shared.kafka.topics import ROLLED
from shared.localkafka import KafkaCluster
from shared.localspark import SparkStandaloneCluster
from shared.offset_sync_store import OffsetSyncStore
from shared.records import OffsetSync
from shared.records.offset_sync import SyncSegment
from tests.integration.test_internal_topics import topic_settings
from tests.support.fidelity import HEADERS, assert_identical, by_partition, fill_varied
from tests.support.kafka_io import consume_all, consume_to_end, end_offsets_sum, make_topic, produce, read_to_end
from tests.support.mm2_config import write_mm2_config
from tests.support.service_process import ServiceProcess
from tests.support.verify_oracle import assert_nothing_lost
from tests.support.waiting import wait_until


def _config(tmp_path: Path, a: KafkaCluster, b: KafkaCluster, topics: str, **flow: str) -> Path:
    return write_mm2_config(tmp_path / "mm2.properties", {"A": a, "B": b}, {"A->B": {"topics": topics, **flow}})


def test_records_arrive_byte_identical_with_exact_offset_syncs(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    topics = [f"dm-{unique}-orders", f"dm-{unique}-payments"]
    for topic in topics:
        make_topic(cluster_a.client_properties(), topic, partitions=4)
        make_topic(cluster_b.client_properties(), f"A.{topic}", partitions=4)
        fill_varied(cluster_a, topic, partitions=4, per_partition=25_000, start_ts=int(time.time() * 1000) - 3_600_000)
    config = _config(tmp_path, cluster_a, cluster_b, f"dm-{unique}-.*")
    with ServiceProcess("data_mirror", config, tmp_path, env={"STRAIT_COMMIT_INTERVAL_MS": "500"}) as mirror:
        mirror.wait_for_log("driver_ready")
        for topic in topics:
            target = consume_all(cluster_b.client_properties(), f"A.{topic}", expected=100_000, timeout_s=240)
            source = consume_all(cluster_a.client_properties(), topic, expected=100_000, timeout_s=120)
            assert_identical(source, target)
        code = mirror.stop()
    assert code == 0, mirror.tail()
    assert_nothing_lost(config, "A->B", f"dm-{unique}-.*", records=200_000, exactly_once=True)
    for own in (progress_topic("A"), STATUS_TOPIC, CONTROL_TOPIC):  # made now or by an earlier test: rolled either way
        assert topic_settings(cluster_b, own) == {"cleanup.policy": "compact", **ROLLED}, own

    # Read as a translator that starts now does: every sync before it answers (MM2 would keep only the newest).
    store = OffsetSyncStore()
    writers: dict[tuple[str, int], set[int]] = {}
    for record in read_to_end(cluster_a.client_properties(), "mm2-offset-syncs.B.internal"):
        assert record.key is not None
        assert record.value is not None
        assert len(record.value) == 16
        sync = OffsetSync.decode(record.key, record.value)
        segment = SyncSegment.from_headers(record.headers)
        if sync.topic in topics:  # other tests' flows A->B write to the same topic
            assert segment is not None, "every sync carries its writer's segment"
            writers.setdefault((sync.topic, sync.partition), set()).add(segment.writer)
        store.handle(sync, segment)
    store.mark_read_to_end()
    assert len(writers) == 8
    for topic in topics:
        for partition in range(4):
            for upstream in (0, 1, 99, 100, 1500, 12_345, 24_999):
                assert store.translate_exact(topic, partition, upstream) == upstream


def test_new_topic_is_mirrored_without_restart(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    config = _config(tmp_path, cluster_a, cluster_b, f"late-{unique}-.*")
    with ServiceProcess("data_mirror", config, tmp_path) as mirror:
        mirror.wait_for_log("driver_ready")
        topic = f"late-{unique}-events"
        make_topic(cluster_a.client_properties(), topic, partitions=2)
        produce(cluster_a.client_properties(), topic, [(b"k", f"e{i}".encode()) for i in range(50)])
        make_topic(cluster_b.client_properties(), f"A.{topic}", partitions=2)  # what topic-sync does
        got = consume_all(cluster_b.client_properties(), f"A.{topic}", expected=50, timeout_s=60)
        assert sorted(r.value or b"" for r in got) == sorted(f"e{i}".encode() for i in range(50))
        assert mirror.stop() == 0


def test_oversized_record_stops_its_partition_only(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    topic = f"big-{unique}"
    make_topic(cluster_a.client_properties(), topic, partitions=2)
    make_topic(cluster_b.client_properties(), f"A.{topic}", partitions=2, **{"max.message.bytes": "20000"})
    source = cluster_a.client_properties()
    produce(source, topic, [(None, f"small-{i}".encode()) for i in range(100)], partition=0)
    produce(source, topic, [(None, b"x" * 50_000)], partition=0)  # offset 100: too large for the target
    produce(source, topic, [(None, f"after-{i}".encode()) for i in range(10)], partition=0)
    produce(source, topic, [(None, f"other-{i}".encode()) for i in range(200)], partition=1)
    config = _config(tmp_path, cluster_a, cluster_b, topic)
    with ServiceProcess("data_mirror", config, tmp_path) as mirror:
        refused = mirror.wait_for_log("record_refused_partition_stopped", timeout_s=120)
        assert (refused["topic"], refused["partition"], refused["offset"]) == (topic, 0, 100)
        assert "max.message.bytes=20000" in refused["reason"]
        got = consume_all(cluster_b.client_properties(), f"A.{topic}", expected=300, timeout_s=15)
        per_partition = by_partition(got)
        assert [r.value for r in per_partition[1]] == [f"other-{i}".encode() for i in range(200)]
        assert [r.value for r in per_partition[0]] == [f"small-{i}".encode() for i in range(100)]
        produce(source, topic, [(None, f"more-{i}".encode()) for i in range(20)], partition=1)
        more = consume_all(cluster_b.client_properties(), f"A.{topic}", expected=320, timeout_s=60)
        assert len(by_partition(more)[1]) == 220, "the other partition kept flowing"
        status = _latest_status(cluster_b, "data-mirror")
        assert status.state == "degraded"
        assert status.details["blocked"][0]["offset"] == 100
        assert mirror.stop() == 0


def _latest_status(cluster: KafkaCluster, service: str) -> ServiceStatus:
    deadline = time.monotonic() + 30
    while True:
        statuses = [s for s in read_statuses(cluster.client_properties()).values() if s.service == service]
        degraded = [s for s in statuses if s.state == "degraded"]
        if degraded or time.monotonic() > deadline:
            return (degraded or statuses)[0]
        time.sleep(1)


def _worker_running_tasks(spark: SparkStandaloneCluster) -> int:
    """The index of a worker with Python workers under it, i.e. running copy tasks now."""
    for index, worker in enumerate(spark.workers):
        if worker.pid is None:
            continue
        children = psutil.Process(worker.pid).children(recursive=True)
        if any("python" in (child.name() or "") for child in children):
            return index
    raise AssertionError("no Spark worker runs a copy task")


CHUNKS, CHUNK_PAUSE_S = 30, 0.5  # the source keeps being written for about 15 s after the copy starts


def _write_steadily(
    props: dict[str, str], topic: str, partitions: int, per_partition: int, started_ms: int, chunks: range
) -> None:
    """Write `chunks` (of CHUNKS) of `per_partition` records to each partition, pausing after each."""
    size = per_partition // CHUNKS
    for chunk in chunks:
        for p in range(partitions):
            batch: list[tuple[bytes | None, bytes | None]] = [
                (f"k{i}".encode(), f"{p}:{i}".encode()) for i in range(chunk * size, (chunk + 1) * size)
            ]
            produce(props, topic, batch, partition=p, headers=HEADERS, timestamp_ms=started_ms + p)
        time.sleep(CHUNK_PAUSE_S)


def test_on_a_spark_cluster_a_worker_killed_mid_stream_loses_and_repeats_nothing(
    cluster_a: KafkaCluster,
    cluster_b: KafkaCluster,
    spark_standalone: SparkStandaloneCluster,
    unique: str,
    tmp_path: Path,
) -> None:
    topic, partitions, per_partition = f"spark-{unique}", 4, 30_000
    total = partitions * per_partition
    source = dict(cluster_a.client_properties())
    make_topic(source, topic, partitions=partitions)
    make_topic(cluster_b.client_properties(), f"A.{topic}", partitions=partitions)
    started_ms = int(time.time() * 1000)
    _write_steadily(source, topic, partitions, per_partition, started_ms, range(1))  # a warm-up chunk
    spark = {
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.executor.memory": "512m",
        "spark.cores.max": "4",
        "spark.scheduler.minRegisteredResourcesRatio": "1.0",
        "spark.authenticate.secret": spark_standalone.secret,  # authentication and encryption: Strait's defaults
    }
    config = write_mm2_config(
        tmp_path / "mm2.properties",
        {"A": cluster_a, "B": cluster_b},
        {"A->B": {"topics": topic, "exactly.once.support": "enabled"}},
        spark,
    )
    env = {"STRAIT_SPARK_MASTER": spark_standalone.master_url, "STRAIT_TASKS": "2", "STRAIT_COMMIT_INTERVAL_MS": "300"}
    target = cluster_b.client_properties()
    killed = None
    # Forwarding batches, a topic written beforehand lands within a second or two; so the copy starts on one chunk and
    # the rest is written while it runs: the worker dies with transactions open and records still being written
    writer = threading.Thread(
        target=_write_steadily,
        args=(source, topic, partitions, per_partition, started_ms, range(1, CHUNKS)),
        name="source-writer",
        daemon=True,
    )
    try:
        with ServiceProcess("data_mirror", config, tmp_path, env=env) as mirror:
            first = partitions * (per_partition // CHUNKS)
            wait_until(lambda: end_offsets_sum(target, f"A.{topic}", partitions) >= first, 240, "the warm-up chunk")
            writer.start()
            wait_until(lambda: end_offsets_sum(target, f"A.{topic}", partitions) > 4 * first, 120, "copies mid-stream")
            killed = _worker_running_tasks(spark_standalone)
            spark_standalone.kill_worker(killed)
            assert writer.is_alive(), "the kill came after the source was written: it tests nothing"
            writer.join(timeout=120)
            records = consume_all(target, f"A.{topic}", expected=total, timeout_s=240, isolation_level="read_committed")
            time.sleep(2)  # copies still on their way (duplicates) land by now
            records = consume_to_end(target, f"A.{topic}", isolation_level="read_committed")
            assert mirror.stop() == 0, mirror.tail()
    finally:
        if killed is not None:
            spark_standalone.restart_worker(killed)
    values = [record.value for record in records]
    assert_nothing_lost(config, "A->B", topic, records=total, exactly_once=True)
    assert len(set(values)) == total, f"lost {total - len(set(values))} records"
    assert len(values) == total, f"{len(values) - total} records copied twice"
    assert all(record.headers == HEADERS for record in records)
