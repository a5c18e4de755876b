"""Odd and refused records on the data path, through one real data-mirror process.

Every topic here is filled before the mirror starts, and one process copies them all (Spark takes a while to
start): tombstones, empty and null headers, hundreds of headers, binary keys, timestamps at the edges, a record
of exactly the target's `max.message.bytes` and one a byte over, a record the target refuses for its timestamp,
and transactional topics with an aborted transaction: by default the source is read `read_committed`, so
aborted records never reach the target (a deliberate difference from MM2, which reads with Java's
`read_uncommitted`); a flow set to `read_uncommitted` copies them as MM2 does.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from aiokafka import AIOKafkaProducer
from confluent_kafka import KafkaError

from shared.kafka.factories import confluent_producer
from shared.localkafka import KafkaCluster
from tests.support.kafka_io import Headers, Rec, consume_all, make_topic
from tests.support.mm2_config import write_mm2_config
from tests.support.replica_check import compare_records
from tests.support.service_process import ServiceProcess

LIMIT = 20_000  # max.message.bytes of the size-edge remote topic
# Old timestamps would be deleted by time retention before the mirror reads them: keep everything.
KEEP = {"retention.ms": "-1"}
NO_FUTURE_LIMIT = {"message.timestamp.after.max.ms": str(2**63 - 1), **KEEP}
TEN_YEARS_MS = 10 * 365 * 24 * 3600 * 1000
WAIT_S = 240


@dataclass(frozen=True)
class Out:
    """A record to produce: partition, key, value, headers, timestamp (None: the producer's clock)."""

    partition: int
    key: bytes | None
    value: bytes | None
    headers: Headers | None = None
    timestamp_ms: int | None = None


def batch_size(key: bytes | None, value: bytes | None, headers: Headers) -> int:
    """Bytes of a v2 batch holding only this record (Kafka's DefaultRecordBatch/DefaultRecord layout)."""

    def varint(n: int) -> int:
        zigzag, size = (n << 1) ^ (n >> 63), 1
        while zigzag >= 0x80:
            zigzag >>= 7
            size += 1
        return size

    def field(data: bytes | None) -> int:
        return varint(-1) if data is None else varint(len(data)) + len(data)

    body = 3 + field(key) + field(value) + varint(len(headers))
    body += sum(field(name.encode()) + field(data) for name, data in headers)
    return 61 + varint(body) + body


def value_for_size(size: int, key: bytes | None = None) -> bytes:
    """A value that makes a header-less record with `key` exactly `size` batch bytes."""
    value = b"v" * (size - 80)
    while batch_size(key, value, []) < size:
        value += b"v"
    assert batch_size(key, value, []) == size
    return value


def produce_each(props: dict[str, str], topic: str, records: list[Out]) -> None:
    """Produce records one by one with their own headers and timestamps; fail on any refused delivery."""
    producer = confluent_producer(props, **{"enable.idempotence": True})
    errors: list[KafkaError] = []
    for record in records:
        extra: dict[str, object] = {"timestamp": record.timestamp_ms} if record.timestamp_ms is not None else {}
        producer.produce(
            topic,
            key=record.key,
            value=record.value,
            headers=record.headers,  # type: ignore[arg-type]  # null header values are allowed
            partition=record.partition,
            on_delivery=lambda err, _msg: errors.append(err) if err else None,
            **extra,  # type: ignore[arg-type]
        )
    assert producer.flush(30) == 0
    assert not errors, errors[0]


def produce_transactions(props: dict[str, str], topic: str, txn_id: str) -> None:
    """Committed c0..c4, aborted a0..a4, committed c5..c9."""
    producer = confluent_producer(props, **{"transactional.id": txn_id})
    producer.init_transactions(30)
    for values, commit in (
        ([f"c{i}" for i in range(5)], True),
        ([f"a{i}" for i in range(5)], False),
        ([f"c{i}" for i in range(5, 10)], True),
    ):
        producer.begin_transaction()
        for value in values:
            producer.produce(topic, key=b"t", value=value.encode(), partition=0)
        producer.flush(30)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)


async def _produce_at_epoch(bootstrap: str, topic: str) -> None:
    # librdkafka reads a timestamp of 0 as "now"; aiokafka writes it as given.
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        await producer.send_and_wait(topic, b"epoch", key=b"k0", partition=0, timestamp_ms=0, headers=[("h", b"0")])
        await producer.send_and_wait(topic, b"after", key=b"k1", partition=0, timestamp_ms=1)
    finally:
        await producer.stop()


def by_partition(records: list[Rec]) -> dict[int, list[tuple[bytes | None, bytes | None, Headers, int]]]:
    """partition -> (key, value, headers, timestamp) in offset order."""
    out: dict[int, list[tuple[bytes | None, bytes | None, Headers, int]]] = defaultdict(list)
    for r in sorted(records, key=lambda r: (r.partition, r.offset)):
        out[r.partition].append((r.key, r.value, r.headers, r.timestamp_ms))
    return out


@dataclass
class Mirrored:
    """The running mirror, the clusters and this module's topic names."""

    mirror: ServiceProcess
    a: dict[str, str]
    b: dict[str, str]
    unique: str

    def topic(self, name: str) -> str:
        return topic_name(self.unique, name)

    def read_target(
        self, name: str, expected: int, *, remote_prefix: str = "A.", timeout_s: float = WAIT_S
    ) -> list[Rec]:
        return consume_all(self.b, remote_prefix + self.topic(name), expected, timeout_s=timeout_s)

    def read_source(self, name: str, expected: int, isolation: str = "read_uncommitted") -> list[Rec]:
        return consume_all(self.a, self.topic(name), expected, timeout_s=60, isolation_level=isolation)


def topic_name(unique: str, name: str) -> str:
    """This module's topic `name` on the source."""
    return f"br-{unique}-{name}"


def _odd_records(now_ms: int) -> list[Out]:
    many: Headers = [(f"h{i % 50}", f"value-{i}".encode() * 3) for i in range(500)]
    return [
        Out(0, None, None, None, now_ms - 5000),
        Out(0, b"key-only", None, [], now_ms - 4000),
        Out(0, None, b"value-only", [("null-header", None)], now_ms - 3000),
        Out(0, b"", b"", [("", b""), ("x", b"")], now_ms - 2000),
        Out(0, b"many", b"headers", many, now_ms - 1000),
        Out(0, bytes(range(256)), bytes(range(255, -1, -1)), [("bin", bytes(range(256)))], now_ms),
        Out(0, b"early", b"1 ms after the epoch", None, 1),
        Out(0, b"late", b"ten years ahead", None, now_ms + TEN_YEARS_MS),
    ]


@pytest.fixture(scope="module")
def mirrored(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Mirrored]:
    """Fill every topic, then start one data-mirror for flows A->B (default isolation) and A2->B (read_uncommitted)."""
    import uuid

    unique = uuid.uuid4().hex[:8]
    a, b = cluster_a.client_properties(), cluster_b.client_properties()

    def t(name: str) -> str:
        return topic_name(unique, name)

    now_ms = int(time.time() * 1000)

    make_topic(a, t("odd"), 1, **NO_FUTURE_LIMIT)
    make_topic(b, "A." + t("odd"), 1, **NO_FUTURE_LIMIT)
    produce_each(a, t("odd"), _odd_records(now_ms))

    make_topic(a, t("epoch"), 1, **KEEP)
    make_topic(b, "A." + t("epoch"), 1, **KEEP)
    asyncio.run(_produce_at_epoch(a["bootstrap.servers"], t("epoch")))

    # The remote topic keeps Kafka 4's default: timestamps at most an hour ahead.
    make_topic(a, t("future"), partitions=2, **NO_FUTURE_LIMIT)
    make_topic(b, "A." + t("future"), partitions=2)
    future = [Out(0, None, f"p0-{i}".encode()) for i in range(2)]
    future += [Out(0, None, b"from the future", None, now_ms + TEN_YEARS_MS), Out(0, None, b"p0-3")]
    future += [Out(1, None, f"p1-{i}".encode()) for i in range(50)]
    produce_each(a, t("future"), future)

    make_topic(a, t("edge"), partitions=2)
    make_topic(b, "A." + t("edge"), partitions=2, **{"max.message.bytes": str(LIMIT)})
    small = [Out(0, None, f"s{i}".encode() * 20) for i in range(200)]
    edge = [*small, Out(0, None, value_for_size(LIMIT)), *small]
    edge += [Out(1, None, f"q{i}".encode()) for i in range(10)]
    edge += [Out(1, None, value_for_size(LIMIT + 1)), *[Out(1, None, f"r{i}".encode()) for i in range(10)]]
    produce_each(a, t("edge"), edge)

    for name in ("txn", "txn-uncommitted"):
        make_topic(a, t(name))
        produce_transactions(a, t(name), f"bad-records-{unique}-{name}")
    make_topic(b, "A." + t("txn"))
    make_topic(b, "A2." + t("txn-uncommitted"))

    tmp = tmp_path_factory.mktemp("bad-records")
    config = write_mm2_config(
        tmp / "mm2.properties",
        {"A": cluster_a, "A2": cluster_a, "B": cluster_b},
        {
            "A->B": {"topics": rf"br-{unique}-(?!txn-uncommitted).*"},
            "A2->B": {"topics": f"br-{unique}-txn-uncommitted", "source.consumer.isolation.level": "read_uncommitted"},
        },
    )
    with ServiceProcess("data_mirror", config, tmp, env={"STRAIT_COMMIT_INTERVAL_MS": "500"}) as mirror:
        mirror.wait_for_log("driver_ready", timeout_s=WAIT_S)
        yield Mirrored(mirror, a, b, unique)
        assert mirror.stop() == 0, mirror.tail()


def test_odd_records_arrive_byte_identical(mirrored: Mirrored) -> None:
    source = mirrored.read_source("odd", 8)
    target = mirrored.read_target("odd", 8)
    assert len(source) == 8
    assert by_partition(target) == by_partition(source)
    records = by_partition(target)[0]
    assert records[0][:2] == (None, None), "a tombstone without a key stays one"
    assert records[2][2] == [("null-header", None)], "a header without a value keeps its null"
    assert len(records[4][2]) == 500
    assert records[6][3] == 1
    assert records[7][3] > time.time() * 1000 + TEN_YEARS_MS / 2


def test_a_record_of_exactly_max_message_bytes_is_copied_and_one_byte_more_stops_only_its_partition(
    mirrored: Mirrored,
) -> None:
    refused = mirrored.mirror.wait_for_log(
        "record_refused_partition_stopped", timeout_s=WAIT_S, topic=mirrored.topic("edge")
    )
    assert (refused["partition"], refused["offset"]) == (1, 10)
    assert f"record of {LIMIT + 1} bytes is larger than max.message.bytes={LIMIT}" in refused["reason"]
    target = by_partition(mirrored.read_target("edge", 411))
    source = by_partition(mirrored.read_source("edge", 422))
    assert len(target[0]) == 401
    assert target[0] == source[0], "the record of exactly the limit and the small ones around it, in one piece"
    assert target[1] == source[1][:10], "partition 1 stops right before the refused record"

    produce_each(mirrored.a, mirrored.topic("edge"), [Out(0, None, f"more-{i}".encode()) for i in range(20)])
    more = by_partition(mirrored.read_target("edge", 431, timeout_s=120))
    assert len(more[0]) == 421, "the other partition keeps flowing"
    assert len(more[1]) == 10, "nothing is copied past the refused record"


def test_a_timestamp_the_target_refuses_stops_only_its_partition(mirrored: Mirrored) -> None:
    refused = mirrored.mirror.wait_for_log(
        "record_refused_partition_stopped", timeout_s=WAIT_S, topic=mirrored.topic("future")
    )
    assert "INVALID_TIMESTAMP" in refused["reason"], refused
    # The broker refuses the whole producer batch that holds the record, so the partition may stop at a valid
    # record sent with it (offset 0 or 1); never after the refused record at offset 2.
    assert refused["partition"] == 0
    assert refused["offset"] <= 2
    target = by_partition(mirrored.read_target("future", 50 + refused["offset"]))
    source = by_partition(mirrored.read_source("future", 54))
    assert target[1] == source[1], "the other partition is copied in full"
    assert target.get(0, []) == source[0][: refused["offset"]]
    print(f"\nfuture timestamp at offset 2: partition 0 stopped at offset {refused['offset']}")


def test_aborted_records_never_reach_the_target_by_default(mirrored: Mirrored) -> None:
    source = mirrored.read_source("txn", 10, isolation="read_committed")
    mirrored.read_target("txn", 10)
    time.sleep(3)  # anything aborted would have been copied with the committed records after it
    target = mirrored.read_target("txn", 10**6, timeout_s=5)
    report = compare_records(source, target)
    print("\n" + report.line("default (read_committed)"))
    assert (report.source_records, report.lost, report.duplicates, report.moved) == (10, 0, 0, 0)
    assert not any(r.value.startswith(b"a") for r in target if r.value), "an aborted record reached the target"


def test_read_uncommitted_copies_aborted_records_as_mm2_does(mirrored: Mirrored) -> None:
    source = mirrored.read_source("txn-uncommitted", 15, isolation="read_uncommitted")
    target = mirrored.read_target("txn-uncommitted", 15, remote_prefix="A2.")
    report = compare_records(source, target)
    print("\n" + report.line("read_uncommitted (MM2's default)"))
    assert (report.source_records, report.lost, report.duplicates) == (15, 0, 0)
    assert [r.value for r in sorted(target, key=lambda r: r.offset)] == [
        f"{kind}{i}".encode() for kind, i in [("c", i) for i in range(5)] + [("a", i) for i in range(5)]
    ] + [f"c{i}".encode() for i in range(5, 10)]
