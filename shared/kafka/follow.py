"""Follow partition 0 of one topic from its beginning, forever, without a consumer group (asyncio, aiokafka).

MM2's internal topics (checkpoints, offset syncs, heartbeats) and Strait's status topic are read this way:
an index is rebuilt from the whole log at start, then kept current. `caught_up` turns true once the log
was read up to the end offset seen when reading started (a topic that does not exist yet counts as read).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from typing import NamedTuple

import structlog
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import KafkaError

from shared.errors import KafkaOperationError
from shared.kafka.errors import translate_kafka_error
from shared.kafka.factories import aio_consumer
from shared.retry import Backoff, retry_async

_log = structlog.get_logger(__name__)
MAX_RETRY_S = 10.0
MAX_RECORDS_PER_BATCH = 2000  # records handed to a handler at once, so one batch never holds the loop for long


class FollowedRecord(NamedTuple):
    """One record of a followed topic, as raw bytes; `timestamp_ms` is the record's timestamp.

    A tuple, not a frozen dataclass: followers make one per record read, thousands a second, and a frozen
    dataclass costs several times as much to build.
    """

    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int
    topic: str = ""  # for log lines about the record
    headers: Sequence[tuple[str, bytes | None]] = ()


RecordsHandler = Callable[[Sequence[FollowedRecord]], None]


class _RetryingFollower:
    """The part every follower shares: `run()` retries `_follow` after Kafka failures (reported to `on_error` and
    kept in `last_error` until a read succeeds), waiting `retry_s`, doubling up to `MAX_RETRY_S` while it persists."""

    def __init__(
        self,
        props: Mapping[str, str],
        topic: str,
        *,
        on_error: Callable[[KafkaOperationError], None] | None,
        retry_s: float,
        poll_timeout_ms: int,
    ) -> None:
        # Positions are the follower's own (no group): the auto-commit setting does not apply.
        self._props = {key: value for key, value in props.items() if key != "enable.auto.commit"}
        self.topic = topic
        self._on_error = on_error
        self._retry_s = retry_s
        self._poll_timeout_ms = poll_timeout_ms
        self.records_read = 0
        self.last_error: KafkaOperationError | None = None

    async def run(self) -> None:
        """Follow until cancelled, retrying after Kafka failures."""
        read_at_last_failure = 0

        def progressed() -> bool:
            nonlocal read_at_last_failure
            moved, read_at_last_failure = self.records_read > read_at_last_failure, self.records_read
            return moved

        await retry_async(
            self._follow_translated,
            backoff=Backoff(self._retry_s, max(self._retry_s, MAX_RETRY_S)),
            retry_on=lambda exc: isinstance(exc, KafkaOperationError),
            on_failure=self._failed,
            progressed=progressed,
        )

    async def _follow(self) -> None:
        raise NotImplementedError

    async def _follow_translated(self) -> None:
        try:
            await self._follow()
        except KafkaError as exc:
            raise translate_kafka_error(exc, operation="follow topic", resource=self.topic) from exc

    def _failed(self, error: BaseException, retry_s: float) -> None:
        _log.warning("follow_failed", topic=self.topic, error=str(error), retry_s=retry_s)
        if isinstance(error, KafkaOperationError):
            self.last_error = error
            if self._on_error is not None:
                self._on_error(error)


class TopicFollower(_RetryingFollower):
    """Reads `topic` partition 0 on one cluster and hands every record, in log order, to `handle`.

    Connection failures are reported to `on_error` and retried after `retry_s`, resuming after the last
    record handled, so `handle` sees each offset once per follower. An exception from `handle` is not a
    Kafka failure: it ends `run()` (and with it the service task that runs it).
    """

    def __init__(
        self,
        props: Mapping[str, str],
        topic: str,
        handle: RecordsHandler,
        *,
        on_caught_up: Callable[[], None] | None = None,
        on_error: Callable[[KafkaOperationError], None] | None = None,
        retry_s: float = 2.0,
        poll_timeout_ms: int = 500,
    ) -> None:
        super().__init__(props, topic, on_error=on_error, retry_s=retry_s, poll_timeout_ms=poll_timeout_ms)
        self._handle = handle
        self._on_caught_up = on_caught_up
        self._next_offset: int | None = None
        self._caught_up = asyncio.Event()
        # When the broker last answered a fetch of the partition (epoch ms), records or none: a follower whose
        # cluster went away stops moving it, though it keeps polling.
        self.fetched_ms: int | None = None

    @property
    def caught_up(self) -> bool:
        """True once the topic was read to its end at least once (or found missing)."""
        return self._caught_up.is_set()

    async def wait_caught_up(self) -> None:
        """Wait until `caught_up`."""
        await self._caught_up.wait()

    def _mark_caught_up(self) -> None:
        if not self._caught_up.is_set():
            self._caught_up.set()
            _log.info("topic_caught_up", topic=self.topic, records=self.records_read)
            if self._on_caught_up is not None:
                self._on_caught_up()

    async def _follow(self) -> None:
        consumer = aio_consumer(self._props, enable_auto_commit=False, auto_offset_reset="earliest")
        try:
            await consumer.start()
            await self._wait_for_topic(consumer)
            partition = TopicPartition(self.topic, 0)
            consumer.assign([partition])
            if self._next_offset is None:
                await consumer.seek_to_beginning(partition)
            else:
                consumer.seek(partition, self._next_offset)
            end = (await consumer.end_offsets([partition]))[partition]
            while True:
                if not self.caught_up and await consumer.position(partition) >= end:
                    self._mark_caught_up()
                # A bounded batch: handling a whole fetch (thousands of small records) would hold the event loop.
                batches = await consumer.getmany(
                    partition, timeout_ms=self._poll_timeout_ms, max_records=MAX_RECORDS_PER_BATCH
                )
                records = batches.get(partition)
                self.fetched_ms = consumer.last_poll_timestamp(partition) or self.fetched_ms
                if records:
                    self._handle(
                        [FollowedRecord(r.offset, r.key, r.value, r.timestamp, r.topic, r.headers) for r in records],
                    )
                    self.records_read += len(records)
                    self._next_offset = records[-1].offset + 1
        finally:
            await consumer.stop()

    async def _wait_for_topic(self, consumer: AIOKafkaConsumer) -> None:
        """Until the topic exists: it has nothing to read, so it counts as caught up."""
        while self.topic not in await consumer.topics():
            self._mark_caught_up()
            await asyncio.sleep(self._retry_s)


async def tail(
    props: Mapping[str, str], topic: str, *, from_beginning: bool = True, poll_timeout_ms: int = 1000
) -> AsyncGenerator[FollowedRecord, None]:
    """Every record of `topic` partition 0 from its beginning (or from now), forever; no consumer group, no retry.

    For short-lived readers (tests, tools) that want records as they come; services use TopicFollower.
    """
    consumer = aio_consumer(props, enable_auto_commit=False, auto_offset_reset="earliest")
    await consumer.start()
    try:
        partition = TopicPartition(topic, 0)
        consumer.assign([partition])
        if from_beginning:
            await consumer.seek_to_beginning(partition)
        else:
            await consumer.seek_to_end(partition)
        while True:
            batches = await consumer.getmany(timeout_ms=poll_timeout_ms)
            for records in batches.values():
                for r in records:
                    yield FollowedRecord(r.offset, r.key, r.value, r.timestamp, r.topic, r.headers)
    finally:
        await consumer.stop()


PartitionRecordsHandler = Callable[[int, Sequence[FollowedRecord]], None]


class PartitionsFollower(_RetryingFollower):
    """Reads a changing set of partitions of one topic, each from its beginning when it is added, read_committed.

    `last_error` holds the failure being retried, until a fetch succeeds again.

    For topics whose partitions are spread over instances (a service follows the ones its lease owns). Batches
    are handed to `handle` partition by partition, at most `max_records` at a time, and the loop yields between
    them, so a long backlog never holds the event loop. Failures go to `on_error` and are retried, resuming
    after the last record handled; an exception from `handle` ends `run()`.
    """

    def __init__(
        self,
        props: Mapping[str, str],
        topic: str,
        handle: PartitionRecordsHandler,
        *,
        on_error: Callable[[KafkaOperationError], None] | None = None,
        retry_s: float = 2.0,
        poll_timeout_ms: int = 200,
        max_records: int = MAX_RECORDS_PER_BATCH,
    ) -> None:
        super().__init__(props, topic, on_error=on_error, retry_s=retry_s, poll_timeout_ms=poll_timeout_ms)
        self._handle = handle
        self._max_records = max_records
        self._wanted: frozenset[int] = frozenset()
        self._next_offsets: dict[int, int] = {}
        self._pending_ends: dict[int, int] = {}
        self._caught_up: set[int] = set()
        self._wanted_changed = asyncio.Event()
        self._reread = False  # a partition was given up: assign again, so one taken back is read from its start

    def follow(self, partitions: frozenset[int]) -> None:
        """Read exactly `partitions` from now on; a dropped partition is read from its beginning if added again."""
        for dropped in self._wanted - partitions:
            self._next_offsets.pop(dropped, None)
            self._caught_up.discard(dropped)
            self._reread = True  # even if it is back before the loop looks: the reader forgot what it read
        self._wanted = partitions
        self._wanted_changed.set()

    @property
    def partitions(self) -> frozenset[int]:
        """The partitions followed now."""
        return self._wanted

    @property
    def caught_up(self) -> bool:
        """Every followed partition was read up to the end it had when it was added."""
        return self._wanted <= self._caught_up

    async def _follow(self) -> None:
        consumer = aio_consumer(
            self._props, enable_auto_commit=False, auto_offset_reset="earliest", isolation_level="read_committed"
        )
        try:
            await consumer.start()
            assigned: frozenset[int] = frozenset()
            self._pending_ends.clear()
            while True:
                if assigned != self._wanted or self._reread:
                    self._reread = False
                    assigned = await self._assign(consumer, self._wanted)
                self._wanted_changed.clear()
                await self._note_caught_up(consumer)
                if not assigned:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._wanted_changed.wait(), self._poll_timeout_ms / 1000)
                    continue
                batches = await consumer.getmany(timeout_ms=self._poll_timeout_ms, max_records=self._max_records)
                self.last_error = None
                for tp, records in batches.items():
                    if tp.partition not in self._wanted:
                        continue  # dropped while the fetch was under way
                    self._handle(
                        tp.partition,
                        [FollowedRecord(r.offset, r.key, r.value, r.timestamp, r.topic, r.headers) for r in records],
                    )
                    self.records_read += len(records)
                    self._next_offsets[tp.partition] = records[-1].offset + 1
                    await asyncio.sleep(0)
        finally:
            await consumer.stop()

    async def _assign(self, consumer: AIOKafkaConsumer, wanted: frozenset[int]) -> frozenset[int]:
        partitions = [TopicPartition(self.topic, p) for p in sorted(wanted)]
        consumer.assign(partitions)
        for tp in partitions:
            next_offset = self._next_offsets.get(tp.partition)
            if next_offset is None:
                await consumer.seek_to_beginning(tp)
            else:
                consumer.seek(tp, next_offset)
        new = [tp for tp in partitions if tp.partition not in self._caught_up]
        ends = await consumer.end_offsets(new) if new else {}
        self._pending_ends = {tp.partition: end for tp, end in ends.items()}
        return wanted

    async def _note_caught_up(self, consumer: AIOKafkaConsumer) -> None:
        for partition, end in list(self._pending_ends.items()):
            if partition not in self._wanted:
                del self._pending_ends[partition]
            elif await consumer.position(TopicPartition(self.topic, partition)) >= end:
                del self._pending_ends[partition]
                self._caught_up.add(partition)
