"""Fill MM2-format internal topics directly: checkpoints for many groups and the offset syncs behind them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from shared.kafka.factories import confluent_admin, confluent_producer
from shared.kafka.topics import ensure_internal_topic
from shared.records.checkpoint import Checkpoint
from shared.records.offset_sync import OffsetSync


def _write(props: Mapping[str, str], topic: str, records: Sequence[tuple[bytes, bytes]]) -> None:
    """Create the single-partition compacted topic if needed and write `records` (key, value) to partition 0."""
    ensure_internal_topic(confluent_admin(props), topic)
    # Uncompressed, as MM2 writes them by default (the translator's aiokafka here has no lz4 codec installed).
    producer = confluent_producer(props, **{"linger.ms": 50, "batch.size": 1_000_000})
    failures: list[object] = []

    def on_delivery(err: object, _msg: object) -> None:
        if err is not None:
            failures.append(err)

    for index, (key, value) in enumerate(records):
        while True:
            try:
                producer.produce(topic, key=key, value=value, partition=0, on_delivery=on_delivery)
                break
            except BufferError:  # the local queue is full: let deliveries drain
                producer.poll(0.1)
        if index % 10_000 == 0:
            producer.poll(0)
    remaining = producer.flush(120)
    if remaining or failures:
        raise RuntimeError(f"writing {topic}: {remaining} undelivered, first failure {failures[:1]}")


def fill_checkpoints(
    props: Mapping[str, str],
    checkpoints_topic: str,
    groups: Sequence[str],
    remote_topics: Sequence[str],
    partitions: int,
) -> int:
    """One checkpoint per group, remote topic and partition (offsets vary by group); returns how many."""
    records = []
    for g, group in enumerate(groups):
        for t, topic in enumerate(remote_topics):
            for partition in range(partitions):
                upstream = 1000 + 7 * g + 13 * t + partition
                checkpoint = Checkpoint(group, topic, partition, upstream, upstream + 5, "")
                records.append((checkpoint.record_key(), checkpoint.record_value()))
    _write(props, checkpoints_topic, records)
    return len(records)


def fill_offset_syncs(
    props: Mapping[str, str], offset_syncs_topic: str, source_topics: Sequence[str], partitions: int
) -> int:
    """One sync per source partition (0 -> 5); returns how many.

    One is what a reader keeps anyway: until the topic was read to its end, each sync replaces the partition's
    stored syncs (MM2's rule), so only the last one per partition counts after a restart.
    """
    records = []
    for topic in source_topics:
        for partition in range(partitions):
            sync = OffsetSync(topic, partition, 0, 5)
            records.append((sync.record_key(), sync.record_value()))
    _write(props, offset_syncs_topic, records)
    return len(records)
