"""Data of the failover-precision benchmark: numbered source records, group positions, the remote copy read back."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping

from benchmarks.positions import Position
from benchmarks.resume_error import RemotePartition
from shared.kafka.factories import confluent_admin, confluent_producer
from shared.kafka.group_offsets import CommittedOffset, GroupAdmin
from shared.kafka.topics import create_topic
from shared.records.offset_sync import OffsetSync
from tests.support.kafka_io import read_to_end


def produce_numbered(props: Mapping[str, str], topic: str, partitions: int, records: int) -> None:
    """Create `topic` and write `records` records to each partition, valued b"<partition>:<seq>" (unique)."""
    create_topic(confluent_admin(props), topic, partitions=partitions)
    producer = confluent_producer(props, **{"enable.idempotence": True, "linger.ms": 20})
    failures: list[object] = []

    def on_delivery(err: object, _msg: object) -> None:
        if err is not None:
            failures.append(err)

    for seq in range(records):
        for partition in range(partitions):
            producer.produce(topic, value=f"{partition}:{seq}".encode(), partition=partition, on_delivery=on_delivery)
        producer.poll(0)
    remaining = producer.flush(60)
    if remaining or failures:
        raise RuntimeError(f"producing {topic}: {remaining} undelivered, first failure {failures[:1]}")


def commit_positions(
    props: Mapping[str, str], topic: str, positions: Iterable[Position], *, timeout_s: float = 120
) -> None:
    """Commit each position as its group's offset on `topic` (the groups have no members).

    Retries groups whose commit failed (a fresh broker answers NOT_COORDINATOR while it loads the offsets topic).
    """
    changes: dict[str, dict[tuple[str, int], CommittedOffset]] = {}
    for position in positions:
        changes.setdefault(position.group, {})[(topic, position.partition)] = CommittedOffset(position.offset)
    admin = GroupAdmin("source", confluent_admin(props), timeout_s=30)
    deadline = time.monotonic() + timeout_s
    while True:
        errors = admin.alter_offsets(changes)
        if not errors:
            return
        if time.monotonic() > deadline:
            group, error = next(iter(errors.items()))
            raise RuntimeError(f"committing {group}: {error}")
        changes = {group: changes[group] for group in errors}
        time.sleep(1)


def prepare_groups(props: Mapping[str, str], topic: str, partitions: int, records: int, groups: list[str]) -> None:
    """`topic` with numbered records, and each of `groups` committed at offset 0 on every partition, so a tool
    started afterwards knows the groups from its start."""
    produce_numbered(props, topic, partitions, records)
    starts = [Position(group, p, 0, "zero") for group in groups for p in range(partitions)]
    commit_positions(props, topic, starts, timeout_s=600)


def remote_partitions(
    source_props: Mapping[str, str], source_topic: str, target_props: Mapping[str, str], remote_topic: str
) -> dict[int, RemotePartition]:
    """Each remote partition with the source offset of every record, matched by the records' unique values."""
    source_offset = {(r.partition, r.value): r.offset for r in read_to_end(source_props, source_topic)}
    copies: dict[int, list[tuple[int, int]]] = {}
    for record in read_to_end(target_props, remote_topic):
        origin = source_offset.get((record.partition, record.value))
        if origin is None:
            raise RuntimeError(f"{remote_topic}-{record.partition}@{record.offset}: value not in {source_topic}")
        copies.setdefault(record.partition, []).append((record.offset, origin))
    remote = {}
    for partition, pairs in copies.items():
        pairs.sort()
        remote[partition] = RemotePartition(
            [target for target, _ in pairs], [origin for _, origin in pairs], end=pairs[-1][0] + 1
        )
    return remote


def offset_sync_counts(props: Mapping[str, str], offset_syncs_topic: str, topics: Iterable[str]) -> dict[str, int]:
    """How many offset syncs the offset-syncs topic holds for each of `topics` (source names)."""
    counts = dict.fromkeys(topics, 0)
    for record in read_to_end(props, offset_syncs_topic):
        if record.key is None or record.value is None:
            continue
        sync = OffsetSync.decode(record.key, record.value)
        if sync.topic in counts:
            counts[sync.topic] += 1
    return counts
