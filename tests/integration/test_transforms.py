"""Connect's transforms and predicates, as MM2 applies them: the same configuration run through MirrorMaker 2
itself and through Strait, from the same source records, gives the same records on the target, one by one.

Both tools read the source cluster under their own alias (MM2 as `MA`, Strait as `SA`), so each has its own
remote topics on the same target; the topic predicate's pattern matches both names. Strait copies them batch by
batch (`strait.copy.batches=on`, as `auto` does for an at-least-once flow); one test also runs the record path a
flow falls back to (`off`) and checks each copy by its offset on both sides.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

import pytest
from confluent_kafka import KafkaException

from shared.kafka.factories import confluent_producer
from shared.localkafka import KafkaCluster
from shared.localkafka.mirror_maker import MirrorMakerProcess
from shared.offset_sync_store import OffsetSyncStore
from shared.records import OffsetSync
from shared.records.offset_sync import SyncSegment
from tests.support.kafka_io import Rec, consume_to_end, end_offsets_sum, make_topic, read_to_end
from tests.support.mm2_config import write_mm2_config
from tests.support.service_process import ServiceProcess
from tests.support.verify_oracle import assert_nothing_lost
from tests.support.waiting import wait_until

CONNECT = "org.apache.kafka.connect.transforms."
RECORDS = 300
PARTITIONS = 2


def _chain() -> dict[str, str]:
    """Drop tombstones; drop two headers from records that carry `secret`; keep only the `keep-*` topics."""
    return {
        "transforms": "dropTombstones,strip,keepOnly",
        "transforms.dropTombstones.type": CONNECT + "Filter",
        "transforms.dropTombstones.predicate": "isTombstone",
        "transforms.strip.type": CONNECT + "DropHeaders",
        "transforms.strip.headers": "secret,trace",
        "transforms.strip.predicate": "hasSecret",
        "transforms.keepOnly.type": CONNECT + "Filter",
        "transforms.keepOnly.predicate": "keepTopics",
        "transforms.keepOnly.negate": "true",
        "predicates": "isTombstone,hasSecret,keepTopics",
        "predicates.isTombstone.type": CONNECT + "predicates.RecordIsTombstone",
        "predicates.hasSecret.type": CONNECT + "predicates.HasHeaderKey",
        "predicates.hasSecret.name": "secret",
        "predicates.keepTopics.type": CONNECT + "predicates.TopicNameMatches",
        # written as a properties file spells it (a backslash escapes): Java's pattern is \p{Upper}+\.keep-.*
        "predicates.keepTopics.pattern": r"\\p{Upper}+\\.keep-.*",
    }


def _fill(cluster: KafkaCluster, topic: str) -> None:
    producer = confluent_producer(cluster.client_properties(), **{"enable.idempotence": True, "linger.ms": 5})
    # Recent timestamps: records older than the broker's retention (7 days by default) vanish at its next check.
    base_ms = int(time.time() * 1000) - RECORDS
    for i in range(RECORDS):
        headers: list[tuple[str, str | bytes]] = [("trace", f"t{i}".encode()), ("keep", b"k")]
        if i % 3 == 0:
            headers.append(("secret", b"s"))
        value = None if i % 7 == 0 else f"v{i}".encode()
        producer.produce(
            topic, value, f"k{i}".encode(), partition=i % PARTITIONS, headers=headers, timestamp=base_ms + i
        )
    assert producer.flush(60) == 0


class Content(NamedTuple):
    """What a copy must keep of a record (its offset may differ: dropped records leave no gap on the target)."""

    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    timestamp_ms: int


def _records(cluster: KafkaCluster, topic: str) -> dict[int, list[Content]]:
    by_partition: dict[int, list[Content]] = {p: [] for p in range(PARTITIONS)}
    for rec in consume_to_end(cluster.client_properties(), topic):
        by_partition[rec.partition].append(_content(rec))
    return by_partition


def _content(rec: Rec) -> Content:
    return Content(rec.key, rec.value, tuple(rec.headers), rec.timestamp_ms)


def _copied(cluster: KafkaCluster, topic: str, partitions: int = PARTITIONS) -> int:
    """Records on `topic` so far (0 while the replicator has not created it)."""
    try:
        return end_offsets_sum(cluster.client_properties(), topic, partitions)
    except KafkaException:
        return 0


def _flow(topics: str, chain: Mapping[str, str]) -> dict[str, str]:
    return {"topics": topics, "emit.checkpoints.enabled": "false", **chain}


def _strait_flow(topics: str, chain: Mapping[str, str], copy_batches: str = "on") -> dict[str, str]:
    return {**_flow(topics, chain), "strait.copy.batches": copy_batches}


def test_the_transforms_strait_implements_give_the_target_what_mm2_gives_it_record_by_record(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    keep, drop = f"keep-{unique}", f"drop-{unique}"
    for topic in (keep, drop):
        make_topic(cluster_a.client_properties(), topic, PARTITIONS)
        _fill(cluster_a, topic)
    topics = f"(keep|drop)-{unique}"
    mm2_config = write_mm2_config(
        tmp_path / "mm2.properties",
        {"MA": cluster_a, "B": cluster_b},
        {"MA->B": _flow(topics, _chain())},
        {
            "B->MA.enabled": "false",
            "emit.heartbeats.enabled": "false",  # MM2 would run its heartbeats through the same transforms
            "sync.topic.acls.enabled": "false",
            "config.storage.replication.factor": "1",
            "offset.storage.replication.factor": "1",
            "status.storage.replication.factor": "1",
        },
    )

    kept = sum(1 for i in range(RECORDS) if i % 7)
    mm2 = MirrorMakerProcess(mm2_config, log_path=tmp_path / "mm2.log", clusters=["B"]).start()
    try:
        wait_until(
            lambda: _copied(cluster_b, f"MA.{keep}") >= kept,
            180,
            f"MM2 copied the {kept} records it keeps",
        )
    finally:
        mm2.stop()

    strait_config = write_mm2_config(
        tmp_path / "strait.properties", {"SA": cluster_a, "B": cluster_b}, {"SA->B": _strait_flow(topics, _chain())}
    )
    for topic in (keep, drop):
        make_topic(cluster_b.client_properties(), f"SA.{topic}", PARTITIONS)
    with ServiceProcess("data_mirror", strait_config, tmp_path) as mirror:
        wait_until(
            lambda: _copied(cluster_b, f"SA.{keep}") >= kept,
            180,
            f"Strait copied the {kept} records it keeps",
        )
        assert mirror.stop() == 0

    by_mm2, by_strait = _records(cluster_b, f"MA.{keep}"), _records(cluster_b, f"SA.{keep}")
    assert sum(len(records) for records in by_mm2.values()) == kept
    assert by_strait == by_mm2, "the same records, in the same partitions and order, with the same headers"
    stripped = [r for records in by_strait.values() for r in records if r.headers == (("keep", b"k"),)]
    assert len(stripped) == sum(1 for i in range(RECORDS) if i % 7 and i % 3 == 0), "secret and trace dropped"
    assert end_offsets_sum(cluster_b.client_properties(), f"MA.{drop}", PARTITIONS) == 0
    assert end_offsets_sum(cluster_b.client_properties(), f"SA.{drop}", PARTITIONS) == 0


MASKS = '''
import json


def mask_email(record):
    """Replace the `email` field of JSON values; drop records that are not JSON objects."""
    try:
        document = json.loads(record.value)
    except (TypeError, ValueError):
        return None
    document["email"] = "***"
    record.value = json.dumps(document, sort_keys=True).encode()
    return record
'''


def test_a_python_transform_masks_a_json_field_of_every_record_it_copies(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    topic = f"people-{unique}"
    make_topic(cluster_a.client_properties(), topic, PARTITIONS)
    make_topic(cluster_b.client_properties(), f"A.{topic}", PARTITIONS)
    producer = confluent_producer(cluster_a.client_properties(), **{"enable.idempotence": True})
    values = [
        json.dumps({"id": i, "email": f"p{i}@example.com"}).encode() if i % 10 else b"not json" for i in range(200)
    ]
    for i, value in enumerate(values):
        producer.produce(topic, value, f"k{i}".encode(), partition=i % PARTITIONS, headers=[("h", b"v")])
    assert producer.flush(60) == 0
    (tmp_path / "people_masks.py").write_text(MASKS)
    chain = {
        "transforms": "mask",
        "transforms.mask.type": "strait.transforms.Python",
        "transforms.mask.function": "people_masks:mask_email",
    }
    config = write_mm2_config(
        tmp_path / "mm2.properties", {"A": cluster_a, "B": cluster_b}, {"A->B": _strait_flow(topic, chain)}
    )
    kept = [v for v in values if v != b"not json"]
    path = os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    with ServiceProcess("data_mirror", config, tmp_path, env={"PYTHONPATH": path}) as mirror:
        wait_until(lambda: _copied(cluster_b, f"A.{topic}") >= len(kept), 180, f"{len(kept)} masked records")
        assert mirror.stop() == 0
    copied = consume_to_end(cluster_b.client_properties(), f"A.{topic}")
    expected = {
        (i % PARTITIONS, f"k{i}".encode()): json.dumps({"email": "***", "id": i}, sort_keys=True).encode()
        for i, value in enumerate(values)
        if value != b"not json"
    }
    assert {(r.partition, r.key): r.value for r in copied} == expected
    assert len(copied) == len(expected), "each kept record once"
    assert all(r.headers == [("h", b"v")] for r in copied)
    monkeypatch.syspath_prepend(str(tmp_path))  # verify runs the transform too, to know what each copy should be
    verified = assert_nothing_lost(config, "A->B", topic, records=len(kept))
    assert verified.totals.dropped == len(values) - len(kept)


def test_insert_header_fails_mm2_as_documented_and_strait_adds_the_header_keeping_the_others(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    """The one transform whose MM2 output cannot be compared: with MM2's own header converter its task fails on the
    first record (what docs/migrating-from-mm2.md says); Strait adds the header as UTF-8 and changes nothing else."""
    topic = f"tagged-{unique}"
    make_topic(cluster_a.client_properties(), topic, PARTITIONS)
    _fill(cluster_a, topic)
    chain = {
        "transforms": "tag",
        "transforms.tag.type": CONNECT + "InsertHeader",
        "transforms.tag.header": "origin",
        "transforms.tag.value.literal": "eu-west",
    }
    mm2_config = write_mm2_config(
        tmp_path / "mm2.properties",
        {"MA": cluster_a, "B": cluster_b},
        {"MA->B": _flow(topic, chain)},
        {
            "B->MA.enabled": "false",
            "emit.heartbeats.enabled": "false",
            "sync.topic.acls.enabled": "false",
            "config.storage.replication.factor": "1",
            "offset.storage.replication.factor": "1",
            "status.storage.replication.factor": "1",
        },
    )
    mm2_log = tmp_path / "mm2.log"
    mm2 = MirrorMakerProcess(mm2_config, log_path=mm2_log, clusters=["B"]).start()
    try:
        wait_until(
            lambda: "Invalid schema type for ByteArrayConverter: STRING" in mm2_log.read_text(errors="replace"),
            180,
            "MM2's task failing on InsertHeader's STRING header",
        )
    finally:
        mm2.stop()
    assert _copied(cluster_b, f"MA.{topic}") == 0, "MM2 copied nothing"

    strait_config = write_mm2_config(
        tmp_path / "strait.properties", {"SA": cluster_a, "B": cluster_b}, {"SA->B": _strait_flow(topic, chain)}
    )
    make_topic(cluster_b.client_properties(), f"SA.{topic}", PARTITIONS)
    with ServiceProcess("data_mirror", strait_config, tmp_path) as mirror:
        wait_until(lambda: _copied(cluster_b, f"SA.{topic}") >= RECORDS, 180, f"Strait copied the {RECORDS} records")
        assert mirror.stop() == 0
    source, copied = _records(cluster_a, topic), _records(cluster_b, f"SA.{topic}")
    expected = {
        partition: [r._replace(headers=(*r.headers, ("origin", b"eu-west"))) for r in records]
        for partition, records in source.items()
    }
    assert copied == expected, "every record, in order, its headers kept and the new one last"


@pytest.mark.parametrize(
    ("copy_batches", "exactly_once"),
    [("on", False), ("off", False), ("on", True)],
    ids=["batches", "records", "batches-exactly-once"],
)
def test_a_record_the_chain_changes_and_one_it_drops_are_checked_by_offset(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path, copy_batches: str, exactly_once: bool
) -> None:
    """Tombstones dropped, `secret` stripped where present, `origin` added to every record: each target record is
    its source record changed as the chain says, at the target offset its source offset maps to across the gaps
    the dropped records leave, and every offset sync pairs the two (a group committed at a dropped record resumes
    at the copy of the next one). Batch by batch, and record by record where a flow falls back to it; exactly-once,
    the transactions' markers take offsets of their own on the target, so a copy's offset is read back (committed
    records only) and the syncs must pair each source record with it."""
    topic = f"by-offset-{copy_batches}{'-eos' if exactly_once else ''}-{unique}"
    make_topic(cluster_a.client_properties(), topic)
    make_topic(cluster_b.client_properties(), f"A.{topic}")
    producer = confluent_producer(cluster_a.client_properties(), **{"enable.idempotence": True, "linger.ms": 20})
    dropped = {10, 11, 37}
    for i in range(RECORDS):
        headers: list[tuple[str, str | bytes]] = [("h", b"v")]
        if i % 20 == 0:
            headers.insert(0, ("secret", b"s"))
        value = None if i in dropped else f"v{i}".encode()
        producer.produce(topic, value, f"k{i}".encode(), partition=0, headers=headers)
    assert producer.flush(60) == 0
    chain = {
        "transforms": "dropTombstones,strip,tag",
        "transforms.dropTombstones.type": CONNECT + "Filter",
        "transforms.dropTombstones.predicate": "isTombstone",
        "transforms.strip.type": CONNECT + "DropHeaders",
        "transforms.strip.headers": "secret",
        "transforms.tag.type": CONNECT + "InsertHeader",
        "transforms.tag.header": "origin",
        "transforms.tag.value.literal": "eu-west",
        "predicates": "isTombstone",
        "predicates.isTombstone.type": CONNECT + "predicates.RecordIsTombstone",
    }
    flow = _strait_flow(topic, chain, copy_batches) | ({"exactly.once.support": "enabled"} if exactly_once else {})
    config = write_mm2_config(tmp_path / "mm2.properties", {"A": cluster_a, "B": cluster_b}, {"A->B": flow})
    kept = [i for i in range(RECORDS) if i not in dropped]
    remote, committed = f"A.{topic}", "read_committed"
    b = cluster_b.client_properties()
    stores: list[OffsetSyncStore] = []
    with ServiceProcess("data_mirror", config, tmp_path) as mirror:
        if exactly_once:  # the end offsets count the markers too: what a read_committed reader sees is counted
            wait_until(lambda: len(consume_to_end(b, remote, isolation_level=committed)) >= len(kept), 180, "copies")
            copies = {
                int((r.key or b"k-1")[1:]): r.offset for r in consume_to_end(b, remote, isolation_level=committed)
            }
        else:
            wait_until(lambda: _copied(cluster_b, remote, 1) >= len(kept), 180, f"{len(kept)} records copied")
            copies = {source: target for target, source in enumerate(kept)}
        last = RECORDS - 1
        wait_until(lambda: _synced(stores, cluster_a, topic, copies, last), 60, "the last record's offset sync")
        assert mirror.stop() == 0
    store = stores[-1]
    copied = consume_to_end(b, remote, isolation_level=committed)
    assert [(r.offset, r.key) for r in copied] == [(copies[i], f"k{i}".encode()) for i in kept]
    if exactly_once:
        assert len(consume_to_end(b, remote)) == len(kept), "nothing written outside the committed transactions"
    for record in copied:
        source = int((record.key or b"k-1")[1:])
        assert record.value == f"v{source}".encode()
        assert record.headers == [("h", b"v"), ("origin", b"eu-west")], f"source offset {source}"
    assert store.translate_exact(topic, 0, 10) == copies[12], "a group at a dropped record resumes at the next copy"
    assert store.translate_exact(topic, 0, 20) == copies[20]
    verified = assert_nothing_lost(config, "A->B", topic, records=len(kept), exactly_once=exactly_once)
    assert verified.totals.dropped == len(dropped), "the tombstones are dropped by the chain, not missing"


def _synced(stores: list[OffsetSyncStore], a: KafkaCluster, topic: str, copies: dict[int, int], last: int) -> bool:
    """Read the offset syncs of `topic` written so far into a new store (added to `stores`); each must pair a source
    record with its copy. True once the record at `last` translates to its copy."""
    store = OffsetSyncStore()
    stores.append(store)
    for record in read_to_end(a.client_properties(), "mm2-offset-syncs.B.internal"):
        assert record.key is not None
        assert record.value is not None
        sync = OffsetSync.decode(record.key, record.value)
        if sync.topic != topic:
            continue
        assert copies[sync.upstream_offset] == sync.downstream_offset, sync
        store.handle(sync, SyncSegment.from_headers(record.headers))
    store.mark_read_to_end()
    return store.translate_exact(topic, 0, last) == copies[last]
