"""Partitions read without a consumer group (blocking, confluent-kafka): followed (`PartitionReader`), or read up
to the end they had when the read began (`read_ranges`, the one loop that does that for every reader:
`read_all_partitions` / `read_to_end` / `last_record` here, data-mirror's progress at start-up).

For readers that assign a single partition themselves and keep their place in memory: data-mirror's start-up
read of its progress topic, its driver's live view of it and of the control topic, and (`read_to_end`) one
look at a topic's current contents such as the status topic. read_committed, so what an aborted transaction
wrote is never seen.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, KafkaError, KafkaException, Message, TopicPartition

from shared.kafka.end_offsets import listed_watermarks
from shared.kafka.error_classes import kafka_error_of
from shared.kafka.errors import translate_kafka_error
from shared.kafka.factories import confluent_consumer
from shared.kafka.follow import FollowedRecord
from shared.kafka.message_headers import HeaderKeyNotUtf8, message_headers
from shared.retry import Backoff, retry_blocking

# A topic too new to read yet: no leader yet, or (right after its creation) a broker the controller's metadata has not
# reached answers "unknown topic". The second also means a topic that does not exist, so it is asked again only for
# a few seconds: a reader of a topic nobody made (the audit before data-mirror's first start) still fails soon.
_NOT_YET = frozenset(
    {KafkaError._UNKNOWN_PARTITION, KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE}
)
NEW_TOPIC_GRACE_S = 10.0
NEW_TOPIC_BACKOFF = Backoff(first_s=0.5)
READER_GROUP = "strait-reader"  # one-shot reads: never joined or committed, named for the brokers' logs


def _too_new(exc: BaseException, *, since: float) -> bool:
    """Worth asking again: no leader yet, or a topic unknown within NEW_TOPIC_GRACE_S of the first ask (`since`)."""
    error = kafka_error_of(exc)
    if error is None:
        return False
    if error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
        return time.monotonic() - since < NEW_TOPIC_GRACE_S
    return error.code() in _NOT_YET or error.retriable()


class PartitionReader:
    """Reads `topic` partition `partition` from its start (`from_end=False`) or from the moment it is made."""

    def __init__(
        self, props: Mapping[str, str], topic: str, *, group_id: str, from_end: bool = False, partition: int = 0
    ) -> None:
        self.topic = topic
        self._partition = TopicPartition(topic, partition)
        self._consumer = confluent_consumer(props, **_settings(group_id))
        self._consumer.assign([TopicPartition(topic, partition, OFFSET_END if from_end else OFFSET_BEGINNING)])
        self.read_error: str | None = None  # what failed in the last `read`, if anything

    def end_offset(self, timeout_s: float) -> int:
        """The partition's end offset, asking again until `timeout_s` while the topic is too new to read."""
        return self.bounds(timeout_s)[1]

    def bounds(self, timeout_s: float) -> tuple[int, int]:
        """(log start, end offset), asking again until `timeout_s` while the topic is too new to read."""
        since = time.monotonic()
        try:
            low, high = retry_blocking(
                lambda: self._consumer.get_watermark_offsets(self._partition, timeout=timeout_s),
                backoff=NEW_TOPIC_BACKOFF,
                within_s=timeout_s,
                retry_on=lambda exc: _too_new(exc, since=since),
            )
            return int(low), int(high)
        except KafkaException as exc:
            raise translate_kafka_error(exc, operation=f"end offset of {self.topic}") from exc

    def read_through(self, timeout_s: float) -> Iterator[FollowedRecord]:
        """Every record from the partition's start to the end it has now (`read_range`; TimeoutError when the end
        is not reached within `timeout_s`); the reader is placed after them."""
        low, high = self.bounds(timeout_s)
        deadline = time.monotonic() + timeout_s
        yield from read_range(self._consumer, self.topic, self._partition.partition, low, high, deadline)

    def read_to_current_end(self, timeout_s: float) -> Iterator[FollowedRecord]:
        """The records from the reader's place to the end the partition has now (TimeoutError past `timeout_s`): for
        a follower that must have seen everything written before this moment, not only what its fetches brought."""
        low, high = self.bounds(timeout_s)
        start = max(low, self.position())  # the position is negative until the first fetch
        if start >= high:
            return  # nothing to read: a range read of nothing would unassign the partition, and the follower with it
        deadline = time.monotonic() + timeout_s
        yield from read_range(self._consumer, self.topic, self._partition.partition, start, high, deadline)

    def position(self) -> int:
        """The offset the next read starts at (past transaction markers too)."""
        return int(self._consumer.position([self._partition])[0].offset)

    def read(self, *, max_records: int = 5000, timeout_s: float = 0.0) -> list[FollowedRecord]:
        """What arrived, in order, up to `max_records`; a failed fetch is kept in `read_error` until a clean read."""
        self.read_error = None
        records: list[FollowedRecord] = []
        for message in self._consumer.consume(num_messages=max_records, timeout=timeout_s):
            error = message.error()
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    self.read_error = f"reading {self.topic}: {error.name()}: {error.str()}"
                continue
            records.append(_record(message, self.topic))
        return records

    def close(self) -> None:
        """Leave (there are no group offsets to commit)."""
        self._consumer.close()


def read_range(
    consumer: Any, topic: str, partition: int, start: int, end: int, deadline: float, *, complete: bool = True
) -> Iterator[FollowedRecord]:
    """The records of `topic`-`partition` from `start` to `end` (exclusive), in order, through `consumer`
    (`read_ranges` for one partition)."""
    for _partition, record in read_ranges(consumer, topic, {partition: (start, end)}, deadline, complete=complete):
        yield record


def read_ranges(
    consumer: Any,
    topic: str,
    ranges: Mapping[int, tuple[int, int]],
    deadline: float,
    *,
    complete: bool = True,
) -> Iterator[tuple[int, FollowedRecord]]:
    """(partition, record) for each partition's records from its start to its end (exclusive), `ranges` being
    partition -> (start, end); in order within a partition, all partitions fetched at once through `consumer`.

    Transaction markers (and, read_committed, aborted records) take offsets but are never returned: when nothing
    comes back, the consumer's position passes them. At `deadline`, `complete` raises TimeoutError naming how far
    the read got; otherwise the read ends there with what it has (a view of current state). Failed fetches are
    skipped; the last one is named in the TimeoutError."""
    positions = {partition: start for partition, (start, end) in ranges.items() if start < end}
    ends = {partition: ranges[partition][1] for partition in positions}
    consumer.assign([TopicPartition(topic, partition, start) for partition, start in positions.items()])
    failed = ""
    while positions:
        if time.monotonic() >= deadline:
            if not complete:
                return
            why = f"; last error: {failed}" if failed else ""
            behind = ", ".join(f"{topic}-{p} at {at} of {ends[p]}" for p, at in sorted(positions.items()))
            raise TimeoutError(f"reading did not reach the end offsets in time ({behind}){why}")
        messages = next_messages(consumer)
        for message in messages:
            error = message.error()
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    failed = f"{error.name()}: {error.str()}"
                continue
            partition = message.partition()
            if partition not in positions:
                continue  # a partition already read to its end (a fetch can run past the end asked for)
            record = _record(message, topic)
            positions[partition] = record.offset + 1
            if record.offset < ends[partition]:
                yield partition, record
        if not messages:
            here = consumer.position([TopicPartition(topic, partition) for partition in positions])
            for placed in here:
                positions[placed.partition] = max(positions[placed.partition], int(placed.offset))
        for partition in [p for p, at in positions.items() if at >= ends[p]]:
            del positions[partition]


def next_messages(consumer: Any, most: int = 1000, wait_s: float = 0.5) -> list[Message]:
    """Up to `most` messages the consumer has fetched already, or else the first to arrive within `wait_s`:
    librdkafka's `consume` waits its whole timeout unless the batch fills, so a read whose last batch is short (a
    partition of a few records, offsets taken by transaction markers) would wait that long every time."""
    return list(consumer.consume(num_messages=most, timeout=0) or consumer.consume(num_messages=1, timeout=wait_s))


def read_all_partitions(
    props: Mapping[str, str],
    topic: str,
    *,
    partitions: Iterable[int] | None = None,
    group_id: str = READER_GROUP,
    timeout_s: float = 30,
    complete: bool = True,
) -> dict[int, list[FollowedRecord]]:
    """partition -> its records from its start up to the end offset it had when the read began, for `partitions`
    (default: every partition); empty if no such topic. read_committed, through `read_ranges`: the partitions'
    bounds come from one batched look-up and their records from one fetch loop (partition by partition, MM2's
    25-partition offsets topic took 15 s).

    `complete`: a read short of an end at `timeout_s` raises TimeoutError; without it, it returns what it has (a
    view of current state, such as the status topic). A failure to look the topic up raises KafkaOperationError.
    """
    consumer = confluent_consumer(props, **_settings(group_id))
    try:
        found = consumer.list_topics(topic, timeout=timeout_s).topics.get(topic)
        if found is None or found.error is not None:
            return {}
        deadline = time.monotonic() + timeout_s
        wanted = sorted(found.partitions if partitions is None else partitions)
        bounds = listed_watermarks(props, [(topic, partition) for partition in wanted], timeout_s=timeout_s)
        ranges = {partition: bounds[(topic, partition)] for partition in wanted}
        records: dict[int, list[FollowedRecord]] = {partition: [] for partition in wanted}
        for partition, record in read_ranges(consumer, topic, ranges, deadline, complete=complete):
            records[partition].append(record)
        return records
    except KafkaException as exc:
        raise translate_kafka_error(exc, operation="read topic", resource=topic) from exc
    finally:
        consumer.close()


def read_to_end(
    props: Mapping[str, str],
    topic: str,
    *,
    partition: int = 0,
    group_id: str = READER_GROUP,
    timeout_s: float = 30,
    complete: bool = True,
) -> list[FollowedRecord]:
    """One partition's records up to its end offset when the read began (`read_all_partitions`)."""
    found = read_all_partitions(
        props, topic, partitions=[partition], group_id=group_id, timeout_s=timeout_s, complete=complete
    )
    return found.get(partition, [])


def each_record(
    props: Mapping[str, str],
    topic: str,
    ranges: Mapping[int, tuple[int, int]],
    *,
    group_id: str = READER_GROUP,
    timeout_s: float = 30,
) -> Iterator[tuple[int, FollowedRecord]]:
    """(partition, record) for each `partition: (start, end)` of `ranges` (end exclusive), all fetched at once
    (`read_ranges`), without keeping them: a range past the log's end gives what is there, one before its start
    begins at the start (TimeoutError: not read within `timeout_s`)."""
    consumer = confluent_consumer(props, **_settings(group_id))
    try:
        deadline = time.monotonic() + timeout_s
        bounds = listed_watermarks(props, [(topic, partition) for partition in ranges], timeout_s=timeout_s)
        clipped = {
            p: (max(start, bounds[(topic, p)][0]), min(end, bounds[(topic, p)][1]))
            for p, (start, end) in ranges.items()
        }
        yield from read_ranges(consumer, topic, clipped, deadline)
    except KafkaException as exc:
        raise translate_kafka_error(exc, operation="read topic", resource=topic) from exc
    finally:
        consumer.close()


def read_offsets(
    props: Mapping[str, str],
    topic: str,
    ranges: Mapping[int, tuple[int, int]],
    *,
    group_id: str = READER_GROUP,
    timeout_s: float = 30,
) -> dict[int, list[FollowedRecord]]:
    """partition -> its records from `start` to `end` (exclusive) for each `partition: (start, end)` of `ranges`
    (`each_record`, kept)."""
    found: dict[int, list[FollowedRecord]] = {partition: [] for partition in ranges}
    for partition, record in each_record(props, topic, ranges, group_id=group_id, timeout_s=timeout_s):
        found[partition].append(record)
    return found


def last_record(
    props: Mapping[str, str], topic: str, *, partition: int = 0, timeout_s: float = 30
) -> FollowedRecord | None:
    """The newest record of one partition, or None when it is empty or the topic does not exist."""
    consumer = confluent_consumer(props, **_settings(READER_GROUP))
    try:
        found = consumer.list_topics(topic, timeout=timeout_s).topics.get(topic)
        if found is None or found.error is not None:
            return None
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout_s)
        deadline = time.monotonic() + timeout_s
        # A trailing transaction marker has an offset but no record; step back until a record is found.
        for start in range(high - 1, max(low, high - 10) - 1, -1):
            records = list(read_range(consumer, topic, partition, start, high, deadline))
            if records:
                return records[-1]
        return None
    except KafkaException as exc:
        raise translate_kafka_error(exc, operation="read topic", resource=topic) from exc
    finally:
        consumer.close()


def _settings(group_id: str) -> dict[str, Any]:
    return {"group.id": group_id, "enable.auto.commit": False, "isolation.level": "read_committed"}


def _record(message: Message, topic: str) -> FollowedRecord:
    try:
        headers = message_headers(message) or ()
    except HeaderKeyNotUtf8:  # no record of Strait's or MM2's has one: read as a record without headers
        headers = ()
    return FollowedRecord(message.offset() or 0, message.key(), message.value(), message.timestamp()[1], topic, headers)
