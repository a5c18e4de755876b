"""Read one partition as alignment entries for the verifier: every record in order, digested, bytes counted.

The digest is Python's own hash of (key, value, timestamp, headers): computed in C, 64 bits, and the same for
both sides because one process reads both. Reads are read_committed, as a consumer of either cluster sees them:
aborted records are not part of a copy.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from confluent_kafka import Consumer, TopicPartition

from shared.kafka.factories import confluent_consumer
from shared.kafka.message_headers import HeaderKeyNotUtf8, message_headers
from shared.kafka.partition_reader import next_messages
from shared.verify.align import Entry

_READ_SETTINGS = {
    "group.id": "strait-verify",
    "enable.auto.commit": False,
    "isolation.level": "read_committed",
    "fetch.max.bytes": 64 * 2**20,
    "max.partition.fetch.bytes": 16 * 2**20,
    "queued.max.messages.kbytes": 256 * 1024,
    "enable.partition.eof": True,
    "auto.offset.reset": "error",  # a start below the log start (retention meanwhile) fails the read, never skips
    "fetch.wait.max.ms": 10,  # the broker answers at once at a partition's end: partitions are read one by one
}


# What a record's headers digest as when confluent-kafka cannot read them (a header key that is not UTF-8)
UNREADABLE_HEADERS: tuple[tuple[str, bytes], ...] = (("<header key not UTF-8>", b""),)


class ReadStalled(TimeoutError):
    """A partition did not reach its end offset in time."""


@dataclass
class ReadCounter:
    """Records and bytes (keys, values, headers) read, over every partition."""

    records: int = 0
    bytes: int = 0


class PartitionEntries:
    """One cluster's reader, reused for partition after partition."""

    def __init__(self, props: Mapping[str, str], *, timeout_s: float) -> None:
        self._consumer: Consumer = confluent_consumer(props, **_READ_SETTINGS)
        self._timeout_s = timeout_s
        self.counter = ReadCounter()

    def offset_at(self, topic: str, partition: int, timestamp_ms: int) -> int | None:
        """The first offset whose timestamp is at or after `timestamp_ms`; None past the end."""
        found = self._consumer.offsets_for_times([TopicPartition(topic, partition, timestamp_ms)], self._timeout_s)
        offset = int(found[0].offset)
        return None if offset < 0 else offset

    def partitions(self, topic: str) -> list[int] | None:
        """The topic's partition numbers; None if the cluster has no such topic."""
        found = self._consumer.list_topics(topic, timeout=self._timeout_s).topics.get(topic)
        if found is None or found.error is not None:
            return None
        return sorted(found.partitions)

    def topics(self) -> list[str]:
        """Every topic of the cluster."""
        return sorted(self._consumer.list_topics(timeout=self._timeout_s).topics)

    def entries(self, topic: str, partition: int, start: int, end: int) -> Iterator[Entry]:
        """The records at offsets start..end-1, in order; ReadStalled if the end is not reached in time."""
        if start >= end:
            return
        assignment = TopicPartition(topic, partition, start)
        consumer = self._consumer
        consumer.assign([assignment])
        counter = self.counter
        position = start
        deadline = time.monotonic() + self._timeout_s
        try:
            while position < end:
                messages = next_messages(consumer, most=min(10_000, end - position))
                for message in messages:
                    if message.error() is not None:
                        continue  # end of partition, or a failed fetch librdkafka retries (the deadline bounds it)
                    offset = int(message.offset() or 0)
                    if offset >= end:
                        position = end
                        break
                    key, value = message.key(), message.value()
                    try:
                        headers = message_headers(message)
                        header_tuple = tuple(headers) if headers else ()
                    except HeaderKeyNotUtf8:
                        header_tuple = UNREADABLE_HEADERS  # the same on both sides: key, value, time still compared
                    counter.records += 1
                    counter.bytes += len(key or b"") + len(value or b"") + sum(len(v or b"") for _, v in header_tuple)
                    yield Entry(offset, hash((key, value, message.timestamp()[1], header_tuple)))
                    position = offset + 1
                if any(message.error() is None for message in messages):
                    deadline = time.monotonic() + self._timeout_s  # records arrived: the read is moving
                else:  # transaction markers and aborted records take offsets but are never returned
                    position = max(position, int(consumer.position([assignment])[0].offset))
                    if time.monotonic() > deadline:
                        raise ReadStalled(f"reading {topic}-{partition} stopped at offset {position} of {end}")
        finally:
            consumer.unassign()

    def close(self) -> None:
        """Leave (no group offsets are kept)."""
        self._consumer.close()
