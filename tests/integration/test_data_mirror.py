"""data-mirror on real clusters: records arrive byte-identical, nothing is lost across crashes, syncs are MM2's."""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path

from shared.localkafka import KafkaCluster
from shared.offset_sync_store import OffsetSyncStore
from shared.records import OffsetSync
from tests.support.kafka_io import Rec, consume_all, make_topic, produce, read_to_end
from tests.support.mm2_config import write_mm2_config
from tests.support.service_process import ServiceProcess

HEADERS = [("trace", b"\x00\xff\x10"), ("dup", b"1"), ("dup", b"2"), ("empty", None)]


def _config(tmp_path: Path, a: KafkaCluster, b: KafkaCluster, topics: str, **flow: str) -> Path:
    return write_mm2_config(tmp_path / "mm2.properties", {"A": a, "B": b}, {"A->B": {"topics": topics, **flow}})


def _by_partition(records: list[Rec]) -> dict[int, list[Rec]]:
    out: dict[int, list[Rec]] = defaultdict(list)
    for record in sorted(records, key=lambda r: (r.partition, r.offset)):
        out[record.partition].append(record)
    return out


def _fill(a: KafkaCluster, topic: str, partitions: int, per_partition: int, start_ts: int) -> None:
    props = a.client_properties()
    for p in range(partitions):
        batch: list[tuple[bytes | None, bytes | None]] = []
        for i in range(per_partition):
            key = None if i % 7 == 0 else f"k{p}-{i}".encode()
            value = None if i % 11 == 0 else bytes([i % 256, 0, 255]) + f"v{p}-{i}".encode()
            batch.append((key, value))
        produce(props, topic, batch, partition=p, headers=HEADERS, timestamp_ms=start_ts + p)


def _assert_identical(source: list[Rec], target: list[Rec]) -> None:
    src, dst = _by_partition(source), _by_partition(target)
    assert src.keys() == dst.keys()
    for partition, records in src.items():
        mirrored = dst[partition]
        assert len(mirrored) == len(records), f"partition {partition}: {len(mirrored)} != {len(records)}"
        for original, copy in zip(records, mirrored, strict=True):
            assert (copy.key, copy.value, copy.headers, copy.timestamp_ms) == (
                original.key,
                original.value,
                original.headers,
                original.timestamp_ms,
            )


def test_records_arrive_byte_identical_with_exact_offset_syncs(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    topics = [f"dm-{unique}-orders", f"dm-{unique}-payments"]
    for topic in topics:
        make_topic(cluster_a.client_properties(), topic, partitions=3)
        make_topic(cluster_b.client_properties(), f"A.{topic}", partitions=3)
        _fill(cluster_a, topic, partitions=3, per_partition=2000, start_ts=int(time.time() * 1000) - 3_600_000)
    config = _config(tmp_path, cluster_a, cluster_b, f"dm-{unique}-.*")
    with ServiceProcess("data_mirror", config, tmp_path, env={"STRAIT_EPOCH_MS": "500"}) as mirror:
        mirror.wait_for_log("driver_ready")
        for topic in topics:
            target = consume_all(cluster_b.client_properties(), f"A.{topic}", expected=6000, timeout_s=120)
            source = consume_all(cluster_a.client_properties(), topic, expected=6000)
            _assert_identical(source, target)
        code = mirror.stop()
    assert code == 0, mirror.tail()

    # A follower that was running while the mirror worked (as checkpoint is) keeps every sync it saw.
    store = OffsetSyncStore()
    store.mark_read_to_end()
    for record in read_to_end(cluster_a.client_properties(), "mm2-offset-syncs.B.internal"):
        assert record.key is not None
        assert record.value is not None
        assert len(record.value) == 16
        store.handle(OffsetSync.decode(record.key, record.value))
    for topic in topics:
        for partition in range(3):
            for upstream in (0, 1, 99, 100, 1500, 1999):
                assert store.translate_exact(topic, partition, upstream) == upstream
