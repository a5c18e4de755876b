"""Batch forwarding on real clusters: what the source's batches hold arrives as a read_committed consumer sees it.

Every at-least-once flow forwards batches by default (`strait.copy.batches=auto`, set here too); these tests
cover the cases where forwarding unchanged would be wrong and the copy must notice: aborted transactions,
compacted batches, batches larger than the target allows, and every compression codec.
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path

from shared.kafka.factories import confluent_producer
from shared.localkafka import KafkaCluster
from shared.offset_sync_store import OffsetSyncStore
from shared.records import OffsetSync
from shared.records.offset_sync import SyncSegment
from tests.support.kafka_io import Rec, consume_all, consume_to_end, make_topic, produce, read_to_end
from tests.support.mm2_config import write_mm2_config
from tests.support.service_process import ServiceProcess
from tests.support.verify_oracle import assert_nothing_lost
from tests.support.waiting import wait_until


def _mirror(tmp_path: Path, a: KafkaCluster, b: KafkaCluster, topics: str) -> ServiceProcess:
    flow = {"topics": topics, "strait.copy.batches": "auto"}
    config = write_mm2_config(tmp_path / "mm2.properties", {"A": a, "B": b}, {"A->B": flow})
    return ServiceProcess("data_mirror", config, tmp_path, env={"STRAIT_COMMIT_INTERVAL_MS": "300"})


def _mirror_one_topic(
    tmp_path: Path, a: KafkaCluster, b: KafkaCluster, topic: str, source: list[Rec], event: str, **fields: object
) -> tuple[dict[str, object], list[Rec]]:
    """Mirror `topic` until its copy holds as many records as `source`; the `event` log line and the copy."""
    with _mirror(tmp_path, a, b, topic) as mirror:
        logged = mirror.wait_for_log(event, 120, topic=topic, **fields)
        target = consume_all(b.client_properties(), f"A.{topic}", expected=len(source), timeout_s=120)
        assert mirror.stop() == 0
    assert_nothing_lost(tmp_path / "mm2.properties", "A->B", topic, records=len(source), exactly_once=True)
    return logged, target


def _fields(records: list[Rec]) -> list[tuple[object, ...]]:
    return [(r.key, r.value, r.headers, r.timestamp_ms) for r in records]


def _read_syncs(a: KafkaCluster, topic: str, copies: dict[tuple[int, int], int]) -> tuple[OffsetSyncStore, int]:
    """A translator's store of every offset sync written so far, and how many were for `topic`; each of those
    must map a source record to its copy."""
    store = OffsetSyncStore()
    syncs = 0
    for record in read_to_end(a.client_properties(), "mm2-offset-syncs.B.internal"):
        assert record.key is not None
        assert record.value is not None
        sync = OffsetSync.decode(record.key, record.value)
        store.handle(sync, SyncSegment.from_headers(record.headers))
        if sync.topic == topic:
            assert copies[(sync.partition, sync.upstream_offset)] == sync.downstream_offset, sync
            syncs += 1
    store.mark_read_to_end()
    return store, syncs


def _assert_syncs_exact(a: KafkaCluster, topic: str, source: list[Rec], target: list[Rec]) -> None:
    """Every offset sync written maps a source record to its copy; a translator reading them answers exactly
    for every record its bounded index still covers (the newest runs of every partition, once their syncs are
    written: a sync follows its records' acknowledgement), and a consumer position just after a record (what a
    group commits) translates to the position just after its copy, across markers, aborted data and compacted
    gaps alike."""
    copies = {(r.partition, r.offset): c.offset for r, c in zip(source, target, strict=True)}
    newest = {r.partition: r for r in source}
    read: list[tuple[OffsetSyncStore, int]] = []

    def newest_synced() -> bool:
        read[:] = [_read_syncs(a, topic, copies)]
        store = read[0][0]
        return all(store.translate_exact(topic, p, r.offset) == copies[(p, r.offset)] for p, r in newest.items())

    wait_until(newest_synced, 60, f"offset syncs of the newest record of each partition of {topic}")
    store, syncs = read[0]
    assert syncs > 0
    covered = [r for r in source if store.is_exact(topic, r.partition, r.offset)]
    assert all(r in covered for r in newest.values()), "the newest records translate exactly"
    for original in covered:
        assert (
            store.translate_exact(topic, original.partition, original.offset)
            == copies[(original.partition, original.offset)]
        )
    for original, after in itertools.pairwise(source):
        position = store.translate_exact(topic, original.partition, original.offset + 1)
        if after.partition == original.partition and position != -1:
            assert position == copies[(original.partition, original.offset)] + 1, f"committed {original.offset + 1}"


def test_aborted_transactions_never_reach_the_target_and_offsets_translate_exactly(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    topic = f"txn-{unique}"
    make_topic(cluster_a.client_properties(), topic)
    make_topic(cluster_b.client_properties(), f"A.{topic}")
    producer = confluent_producer(cluster_a.client_properties(), **{"transactional.id": f"t-{unique}", "linger.ms": 5})
    producer.init_transactions(30)
    for round_ in range(12):
        producer.begin_transaction()
        for i in range(40):
            producer.produce(topic, key=f"k{i}".encode(), value=f"r{round_}-{i}".encode(), partition=0)
        assert producer.flush(30) == 0  # the records reach the log before the transaction ends
        if round_ % 3 == 1:
            producer.abort_transaction(30)
        else:
            producer.commit_transaction(30)
        if round_ == 6:  # plain records between transactions
            produce(cluster_a.client_properties(), topic, [(None, f"plain-{i}".encode()) for i in range(30)])
    source = consume_to_end(cluster_a.client_properties(), topic, isolation_level="read_committed")
    assert len(source) == 8 * 40 + 30
    everything = consume_to_end(cluster_a.client_properties(), topic)  # read_uncommitted: aborted ones too
    assert len(everything) == 12 * 40 + 30, "the aborted records are in the source log"
    assert not any(r.value and r.value.startswith(b"r1-") for r in source)
    with _mirror(tmp_path, cluster_a, cluster_b, topic) as mirror:
        mirror.wait_for_log("batches_forwarded", topic=topic)
        target = consume_all(cluster_b.client_properties(), f"A.{topic}", expected=len(source), timeout_s=120)
        assert _fields(target) == _fields(source)
        assert mirror.stop() == 0
    assert len(consume_to_end(cluster_b.client_properties(), f"A.{topic}")) == len(source), "nothing more arrived"
    assert_nothing_lost(tmp_path / "mm2.properties", "A->B", topic, records=len(source), exactly_once=True)
    _assert_syncs_exact(cluster_a, topic, source, target)


def test_a_compacted_source_arrives_as_consumers_see_it_with_exact_offsets(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    topic = f"compacted-{unique}"
    compacting = {
        "cleanup.policy": "compact",
        "segment.ms": "100",
        "min.cleanable.dirty.ratio": "0.001",
        "min.compaction.lag.ms": "0",
        "delete.retention.ms": "100",
    }
    make_topic(cluster_a.client_properties(), topic, partitions=1, **compacting)
    make_topic(cluster_b.client_properties(), f"A.{topic}")
    written = 0
    for round_ in range(6):  # each round rolls a segment (segment.ms) so the cleaner can compact the last one
        # every other key is written again each round: compaction leaves holes between the unique ones
        keys = [f"k{i % 10}" if i % 2 else f"u{round_}-{i}" for i in range(30)]
        batch = [(key.encode(), f"v{round_}-{i}".encode()) for i, key in enumerate(keys)]
        produce(cluster_a.client_properties(), topic, batch, partition=0)
        written += len(batch)
        time.sleep(0.2)
    # The cleaner passes every 15 s at most while a log has dirty segments: wait until every closed segment (the
    # rounds before the last, which stays in the active one) holds each key once, so no later pass removes a record
    # from the source after it was copied (the verifier would find it on the target only: "unexpected").
    last_round_starts = written - 30

    def closed_segments_compacted() -> bool:
        keys = [r.key for r in consume_to_end(cluster_a.client_properties(), topic) if r.offset < last_round_starts]
        return len(keys) == len(set(keys))

    wait_until(closed_segments_compacted, timeout_s=90, what="the source topic's compaction")
    source = consume_to_end(cluster_a.client_properties(), topic)
    offsets = [r.offset for r in source]
    assert any(b - a > 1 for a, b in itertools.pairwise(offsets)), "compaction left offset gaps"
    _, target = _mirror_one_topic(
        tmp_path, cluster_a, cluster_b, topic, source, "batches_reencoded", reason="offset gaps (compacted)"
    )
    assert _fields(target) == _fields(source)
    _assert_syncs_exact(cluster_a, topic, source, target)


def test_a_batch_larger_than_the_target_allows_arrives_record_by_record(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    topic = f"bigbatch-{unique}"
    make_topic(cluster_a.client_properties(), topic)
    make_topic(cluster_b.client_properties(), f"A.{topic}", partitions=1, **{"max.message.bytes": "20000"})
    values = [(f"k{i}".encode(), bytes([i % 256]) * 300) for i in range(300)]  # 90 KB in a few batches
    produce(cluster_a.client_properties(), topic, values, partition=0)
    source = consume_to_end(cluster_a.client_properties(), topic)
    reencoded, target = _mirror_one_topic(tmp_path, cluster_a, cluster_b, topic, source, "batches_reencoded")
    assert "max.message.bytes=20000" in str(reencoded["reason"])
    assert _fields(target) == _fields(source)
    _assert_syncs_exact(cluster_a, topic, source, target)


def test_batches_of_every_codec_arrive_identical_as_they_are_or_recompressed_by_the_target(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    topic, gzip_topic = f"codecs-{unique}", f"codecs2-{unique}"
    for name in (topic, gzip_topic):
        make_topic(cluster_a.client_properties(), name, partitions=2)
    make_topic(cluster_b.client_properties(), f"A.{topic}", partitions=2)
    make_topic(cluster_b.client_properties(), f"A.{gzip_topic}", partitions=2, **{"compression.type": "gzip"})
    for name in (topic, gzip_topic):
        for round_, codec in enumerate(["none", "gzip", "snappy", "lz4", "zstd"] * 2):
            batch = [(f"k{i}".encode(), f"{codec}-{round_}-{i}".encode() * 5) for i in range(100)]
            produce(cluster_a.client_properties(), name, batch, partition=round_ % 2, compression=codec)
    with _mirror(tmp_path, cluster_a, cluster_b, f"codecs2?-{unique}") as mirror:
        mirror.wait_for_log("batches_forwarded", topic=topic)
        for name in (topic, gzip_topic):
            source = consume_to_end(cluster_a.client_properties(), name)
            target = consume_all(cluster_b.client_properties(), f"A.{name}", expected=len(source), timeout_s=120)
            key = lambda r: (r.partition, r.offset)  # noqa: E731
            assert _fields(sorted(target, key=key)) == _fields(sorted(source, key=key))
            _assert_syncs_exact(cluster_a, name, sorted(source, key=key), sorted(target, key=key))
        assert mirror.stop() == 0
    assert_nothing_lost(tmp_path / "mm2.properties", "A->B", f"codecs2?-{unique}", records=2000, exactly_once=True)
