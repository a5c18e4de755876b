"""A target that throttles the mirror (a client quota on its produce rate) while the source's retention deletes
records the mirror has not read yet: whatever the race, every source record is either on the target, unchanged and
in order, or counted as expired (by data-mirror's metric and by `strait verify`, the same number), and nothing else.

Retention is played by DeleteRecords on the source (what the log cleaner does when segments age out, at a moment the
test chooses). At-least-once forwards batches with a byte bound of 128 KiB, so most of the backlog is still on the
source when it goes and is counted expired; exactly-once reads record by record, and what its consumer fetched
before the deletion is copied: there the test shows the same accounting, with no duplicate.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import TopicPartition

from shared.kafka.factories import confluent_admin
from shared.localkafka import KafkaCluster
from shared.localkafka.ports import free_port
from tests.support.kafka_io import consume_to_end, end_offsets, make_topic, produce
from tests.support.metrics_page import metric
from tests.support.mm2_config import write_mm2_config
from tests.support.progress import copied_to
from tests.support.quotas import throttle_producers
from tests.support.service_process import ServiceProcess
from tests.support.verify_oracle import verify
from tests.support.waiting import wait_until

PARTITIONS = 2
RECORDS = 3_000  # per partition, 1 KiB each
DELETED_BEFORE = 2_000  # the source's log start after "retention", at least
UNREAD_MARGIN = 600  # records past the target's end that the at-least-once mirror has not read (its bound: 128)
QUOTA_BYTES_PER_S = 256 * 1024
SOURCE_BATCH_BYTES = 16_384


def _value(partition: int, offset: int) -> bytes:
    return f"{partition}:{offset}:".encode().ljust(1024, b".")


@pytest.mark.parametrize("mode", ["batches", "exactly-once"])
def test_a_throttled_target_and_retention_racing_the_mirror_lose_nothing_uncounted(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path, mode: str
) -> None:
    topic = f"quota-retention-{mode}-{unique}"
    remote = f"A.{topic}"
    source, target = cluster_a.client_properties(), cluster_b.client_properties()
    make_topic(source, topic, PARTITIONS)
    make_topic(target, remote, PARTITIONS)
    for partition in range(PARTITIONS):
        # Small source batches (Kafka's default batch.size): one fetch must not carry the copy past the cut.
        records = [(None, _value(partition, i)) for i in range(RECORDS)]
        produce(source, topic, records, partition=partition, batch_bytes=SOURCE_BATCH_BYTES)
    flow = {"topics": topic}
    if mode == "exactly-once":
        flow["exactly.once.support"] = "enabled"
    overrides = {"B.producer.buffer.memory": str(128 * 1024)}
    config = write_mm2_config(tmp_path / "mm2.properties", {"A": cluster_a, "B": cluster_b}, {"A->B": flow}, overrides)
    port = free_port()
    # One task copies both partitions: they start together (two tasks may start seconds apart on a busy machine,
    # and the first would run far ahead of the second under its own quota).
    env = {"STRAIT_COMMIT_INTERVAL_MS": "500", "STRAIT_TASKS": "1"}
    throttle_producers(cluster_b, QUOTA_BYTES_PER_S)
    try:
        with ServiceProcess("data_mirror", config, tmp_path, "--metrics-port", str(port), env=env) as mirror:
            # Records reach the target before the progress that names them (which the throttle delays too).
            # Every partition has copies on the target before retention cuts: `strait verify` learns that records
            # expired from the copies of records the source no longer holds (a partition with none tells nothing).
            wait_until(lambda: min(end_offsets(target, remote, PARTITIONS)) > 0, 120, f"{remote} filling")
            # Retention takes at least the first DELETED_BEFORE records, and always a stretch past what the target
            # holds now (a quota lets a first burst through): the mirror, holding at most its byte bound, has not
            # read that stretch.
            cuts = [max(DELETED_BEFORE, end + UNREAD_MARGIN) for end in end_offsets(target, remote, PARTITIONS)]
            if mode == "batches":
                assert max(cuts) < RECORDS, f"the quota did not slow the copy: retention would leave nothing ({cuts})"
            admin = confluent_admin(source)
            cut = [TopicPartition(topic, p, min(cuts[p], RECORDS)) for p in range(PARTITIONS)]
            for done in admin.delete_records(cut).values():
                done.result(30)

            def copied_all() -> bool:
                return all(copied_to(target, "A", "A->B", topic, p) == RECORDS for p in range(PARTITIONS))

            wait_until(copied_all, 180, f"the mirror's progress at {RECORDS} on every partition of {topic}")
            findings = {f.partition: f for f in verify(config, "A->B", topic).findings}
            expired_total = sum(result.expired_records for result in findings.values())

            def expired_metric() -> float:
                return sum(
                    metric(port, "strait_mirror_records_expired_total", topic=remote, partition=str(p))
                    for p in range(PARTITIONS)
                )

            # (the metric follows the progress topic: it may lag the progress by a commit or two)
            deadline = time.monotonic() + 60
            while (counted := expired_metric()) != expired_total and time.monotonic() < deadline:
                time.sleep(0.2)
            assert counted == expired_total, f"verify counts {expired_total} expired, the mirror's metric {counted}"
            assert mirror.stop() == 0, mirror.tail()
        assert "task_cancelled" not in mirror.log_path.read_text(), "the throttle was taken for a failure"
    finally:
        throttle_producers(cluster_b, None)

    copied = consume_to_end(target, remote, isolation_level="read_committed")
    found = {(record.partition, record.value) for record in copied}
    if mode == "exactly-once":
        assert len(found) == len(copied), "exactly-once wrote a record twice"
    for partition in range(PARTITIONS):
        mine = [record.value for record in copied if record.partition == partition]
        offsets = [int((value or b"").split(b":")[1]) for value in mine]
        assert offsets == sorted(offsets), f"partition {partition} out of order"
        kept = set(offsets)
        result = findings[partition]
        expired = {o for gone in result.expired for o in range(gone.first, gone.last + 1)}
        assert not kept & expired, f"partition {partition}: offsets both copied and counted expired"
        assert kept | expired == set(range(RECORDS)), f"partition {partition}: a record neither copied nor counted"
        assert all(value == _value(partition, offset) for value, offset in zip(mine, offsets, strict=True))
        assert (result.missing_records, result.altered_records, result.unexpected) == (0, 0, 0), result
    if mode == "batches":
        assert expired_total > 0, "the byte bound left most of the backlog on the source: some must have expired"
