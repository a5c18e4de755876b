"""PartitionReader on a real broker: committed records only, from the start or from now on, and its end offset."""

from __future__ import annotations

import time

from shared.kafka.factories import confluent_producer
from shared.kafka.partition_reader import PartitionReader, read_all_partitions
from shared.localkafka import KafkaCluster
from tests.support.kafka_io import make_topic, produce


def _read_all(reader: PartitionReader, expected: int, timeout_s: float = 30) -> list[bytes | None]:
    values: list[bytes | None] = []
    deadline = time.monotonic() + timeout_s
    while len(values) < expected and time.monotonic() < deadline:
        values += [record.value for record in reader.read(timeout_s=0.5)]
    return values


def test_reads_committed_records_from_the_start_or_from_now_on(cluster_a: KafkaCluster, unique: str) -> None:
    props = cluster_a.client_properties()
    topic = f"reader-{unique}"
    make_topic(props, topic, 1)
    produce(props, topic, [(None, b"one"), (None, b"two")], partition=0)
    aborting = confluent_producer(props, **{"transactional.id": f"reader-{unique}"})
    aborting.init_transactions(30)
    aborting.begin_transaction()
    aborting.produce(topic, value=b"rolled back", partition=0)
    assert aborting.flush(30) == 0  # written, then rolled back
    aborting.abort_transaction(30)
    produce(props, topic, [(None, b"three")], partition=0)

    from_start = PartitionReader(props, topic, group_id=f"g-{unique}")
    from_now = PartitionReader(props, topic, group_id=f"g-{unique}", from_end=True)
    try:
        end = from_start.end_offset(30)
        assert end == 5  # three records, the aborted one and its abort marker
        assert _read_all(from_start, 3) == [b"one", b"two", b"three"]
        assert from_start.position() == end
        assert from_start.read_error is None
        from_now.read(timeout_s=1)  # positions at the end
        produce(props, topic, [(None, b"four")], partition=0)
        assert _read_all(from_now, 1) == [b"four"]
    finally:
        from_start.close()
        from_now.close()


def test_a_follower_reads_everything_written_before_now_not_only_what_its_fetches_brought(
    cluster_a: KafkaCluster, unique: str
) -> None:
    """The audit's syncs: a range counted "unplaced" must mean no sync was written, not that none was fetched yet."""
    props = cluster_a.client_properties()
    topic = f"reader-now-{unique}"
    make_topic(props, topic, 1)
    produce(props, topic, [(None, f"sync-{i}".encode()) for i in range(2_000)], partition=0)
    reader = PartitionReader(props, topic, group_id=f"g-{unique}")
    try:
        assert reader.read(timeout_s=0) == []  # a new follower has fetched nothing: a zero-wait read sees nothing
        first = [record.value for record in reader.read_to_current_end(30)]
        assert first == [f"sync-{i}".encode() for i in range(2_000)]
        produce(props, topic, [(None, b"later")], partition=0)
        assert [record.value for record in reader.read_to_current_end(30)] == [b"later"]
        assert list(reader.read_to_current_end(30)) == []
    finally:
        reader.close()


def test_every_partition_is_read_to_the_end_it_had_committed_records_only(cluster_a: KafkaCluster, unique: str) -> None:
    """`strait migrate` reads MM2's 25-partition offsets topic this way: every partition, to its own end, with
    partitions empty, ending on a transaction marker or holding one record."""
    props = cluster_a.client_properties()
    topic = f"reader-all-{unique}"
    make_topic(props, topic, 25)
    for partition in range(0, 25, 2):
        produce(props, topic, [(None, f"{partition}-{i}".encode()) for i in range(partition + 1)], partition=partition)
    aborting = confluent_producer(props, **{"transactional.id": f"reader-all-{unique}"})
    aborting.init_transactions(30)
    aborting.begin_transaction()
    aborting.produce(topic, value=b"rolled back", partition=1)
    assert aborting.flush(30) == 0
    aborting.abort_transaction(30)

    read = read_all_partitions(props, topic, timeout_s=30)
    produce(props, topic, [(None, b"after the read")], partition=0)

    assert {p: [r.value for r in records] for p, records in read.items()} == {
        p: [f"{p}-{i}".encode() for i in range(p + 1)] if p % 2 == 0 else [] for p in range(25)
    }
    assert read_all_partitions(props, topic, partitions=[0], timeout_s=30)[0][-1].value == b"after the read"


def test_a_follower_that_caught_up_with_an_empty_topic_reads_what_is_written_after(
    cluster_a: KafkaCluster, unique: str
) -> None:
    """data-mirror reads its DR states to their end before its first task, then follows them: a flow failed over
    after that must be seen, though the topic was empty at the start."""
    props = cluster_a.client_properties()
    topic = f"reader-empty-{unique}"
    make_topic(props, topic, 1)
    reader = PartitionReader(props, topic, group_id=f"g-{unique}")
    try:
        assert list(reader.read_to_current_end(30)) == []
        produce(props, topic, [(None, b"later")], partition=0)
        assert _read_all(reader, 1) == [b"later"]
    finally:
        reader.close()
