"""The Spark task: copy one epoch of records for a few partitions, then commit progress and offset syncs.

Runs in a Spark Python worker; pure apart from its Kafka clients, and nothing it reads goes back to the
driver except per-partition counts and offsets. At-least-once: progress is written after every record
before it was acknowledged. Exactly-once: records and progress commit in one target transaction.
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, TopicPartition
from confluent_kafka.admin import OffsetSpec

from services.data_mirror.clients import cached_admin, cached_consumer, cached_producer, forget_admin, forget_producer
from services.data_mirror.progress import ProgressKey, encode_progress
from services.data_mirror.sync_rules import SyncTracker
from services.data_mirror.work import PartitionResult, PartitionWork, SyncPoint, TaskResult, TaskSpec
from shared.records import OffsetSync

CONSUME_BATCH = 5000
LOOKUP_TIMEOUT_S = 15
FLUSH_TIMEOUT_S = 60
UNKNOWN_TOPIC_ID = 100  # KafkaError.UNKNOWN_TOPIC_ID, which the client's type stubs lack
RECORD_BATCH_OVERHEAD = 61  # v2 batch header, with the log's offset and length fields


@dataclass
class _Partition:
    """Mutable per-partition state during one epoch."""

    work: PartitionWork
    result: PartitionResult
    tracker: SyncTracker
    in_flight: deque[int] = field(default_factory=deque)
    syncs: list[SyncPoint] = field(default_factory=list)
    delivered_upto: int | None = None
    delivered_downstream: int = -1  # the target offset of `delivered_upto`
    last_produced: int | None = None
    paused: bool = False
    retry_from: int | None = None  # a record read but not sent (the producer did not know its partition yet)

    def fail(self, offset: int, reason: str) -> None:
        """Remember the first refused offset; nothing at or after it counts as copied."""
        if self.result.failed_offset is None or offset < self.result.failed_offset:
            self.result.failed_offset = offset
            self.result.failure = reason


class _Router:
    """Delivery reports of the cached producer go to whichever task run is active in this worker."""

    current: _TaskRun | None = None

    @classmethod
    def on_delivery(cls, err: KafkaError | None, msg: Message) -> None:
        if cls.current is not None:
            cls.current.on_delivery(err, msg)


def run_task(spec: TaskSpec) -> TaskResult:
    """Spark entry point: one epoch of one task; errors come back as data, never as a lost record."""
    began = time.monotonic()
    attempts = 2 if spec.exactly_once else 1
    result = TaskResult(spec.flow, spec.slot)
    for attempt in range(attempts):
        run = _TaskRun(spec)
        try:
            result = run.execute()
            break
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            fenced = isinstance(error, KafkaError) and (error.fatal() or error.code() == KafkaError._FENCED)
            run.abandon()
            result = TaskResult(spec.flow, spec.slot, error=_describe(exc))
            if not (fenced and attempt + 1 < attempts):
                break
        except Exception as exc:  # reported to the driver, which retries from the committed progress
            run.abandon()
            result = TaskResult(spec.flow, spec.slot, error=_describe(exc))
            break
    result.duration_s = time.monotonic() - began
    return result


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class _TaskRun:
    """One execution of a TaskSpec."""

    def __init__(self, spec: TaskSpec) -> None:
        self.spec = spec
        self.transactional_id = f"strait-data-mirror.{spec.flow}.{spec.slot}" if spec.exactly_once else None
        self.parts: dict[tuple[str, int], _Partition] = {}
        self.by_remote: dict[tuple[str, int], _Partition] = {}
        self.consumer = cached_consumer(spec.source_consumer, group_id=f"strait-data-mirror.{spec.flow}")
        self.producer = cached_producer(spec.target_producer, _Router.on_delivery, self.transactional_id)
        self.in_transaction = False
        self.client_error: KafkaError | None = None
        self.stale_producer = False

    # -- set-up ------------------------------------------------------------------------------------
    def _resolve_starts(self) -> None:
        """Turn 'no progress yet' into a concrete offset and notice offsets lost to source retention.

        A partition the admin client does not know is left out of this epoch, and the client is replaced so the
        next epoch sees fresh metadata: a partition added since (copied next epoch) or a topic deleted on the
        source (dropped by the driver's next refresh). The task's other partitions copy as usual.
        """
        tps = [TopicPartition(w.source_topic, w.partition) for w in self.spec.partitions]
        try:
            earliest, latest = _bounds(cached_admin(self.spec.source_admin), tps)
        except KafkaException:
            # The admin client takes partition leaders and their epochs from its metadata cache, which a leader
            # change on the source leaves stale for up to metadata.max.age.ms (15 min): until then list_offsets
            # fails (FENCED_LEADER_EPOCH, "No leaders found"). A new client looks the leaders up afresh.
            forget_admin(self.spec.source_admin)
            earliest, latest = _bounds(cached_admin(self.spec.source_admin), tps)
        if len(earliest) < len(tps) or len(latest) < len(tps):
            forget_admin(self.spec.source_admin)
        for work in self.spec.partitions:
            key = (work.source_topic, work.partition)
            if key not in earliest or key not in latest:
                continue
            low, high = earliest[key], latest[key]
            start = work.start_offset
            expired = 0
            if start is None:
                start = high if self.spec.reset_to_latest else low
            elif start < low:
                expired, start = low - start, low
            elif start > high:
                # The source partition ends before our position: the topic was made again (or truncated by an
                # unclean leader election). Its records are not the ones we copied, so copy all that is there.
                start = low
            result = PartitionResult(work.source_topic, work.partition, work.remote_topic, start, start)
            result.high_watermark = high
            result.expired_records = expired
            part = _Partition(work, result, SyncTracker(self.spec.offset_lag_max))
            self.parts[key] = part
            self.by_remote[(work.remote_topic, work.partition)] = part

    # -- the copy loop -------------------------------------------------------------------------------
    def execute(self) -> TaskResult:
        """Copy until the epoch ends, then commit progress (and syncs)."""
        self._resolve_starts()
        assignment = [
            TopicPartition(p.work.source_topic, p.work.partition, p.result.start_offset)
            for p in self.parts.values()
            if p.work.stop_before is None or p.result.start_offset < p.work.stop_before
        ]
        _Router.current = self
        try:
            if self.transactional_id:
                self.producer.begin_transaction()
                self.in_transaction = True
            if assignment:
                self.consumer.assign(assignment)
                # A cached consumer remembers partitions paused by an earlier epoch; start every epoch unpaused.
                self.consumer.resume(assignment)
                self._copy_until(time.monotonic() + self.spec.epoch_ms / 1000)
            result = self._commit()
            if self.stale_producer:  # its metadata lacks a partition added to the remote topic: start afresh
                forget_producer(self.spec.target_producer, _Router.on_delivery, self.transactional_id)
            return result
        finally:
            _Router.current = None
            if assignment:
                self.consumer.resume(assignment)
            self.consumer.unassign()

    def _copy_until(self, deadline: float) -> None:
        produce = self.producer.produce
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or all(p.paused for p in self.parts.values()):
                break
            messages = self.consumer.consume(num_messages=CONSUME_BATCH, timeout=min(0.2, remaining))
            now_ms = time.time() * 1000
            for msg in messages:
                error = msg.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF or error.retriable():
                        continue
                    gone = self.parts.get((msg.topic() or "", msg.partition() or 0))
                    if error.code() in _TOPIC_GONE and gone is not None:
                        self._pause(gone)  # deleted on the source: the driver's next refresh drops it
                        continue
                    raise KafkaException(error)
                topic, partition, offset = msg.topic() or "", msg.partition() or 0, msg.offset() or 0
                part = self.parts[(topic, partition)]
                if part.paused:
                    continue
                if part.work.stop_before is not None and offset >= part.work.stop_before:
                    self._pause(part)
                    continue
                timestamp = msg.timestamp()[1]
                key = msg.key()
                value = msg.value()
                headers = msg.headers()
                limit = part.work.max_record_bytes
                if limit is not None and not _surely_fits(key, value, headers, limit):
                    size = _record_size(key, value, headers)
                    if size > limit:
                        reason = (
                            f"record of {size} bytes is larger than max.message.bytes={limit} "
                            f"of {part.work.remote_topic}"
                        )
                        part.fail(offset, reason)
                        self._pause(part)
                        continue
                while True:
                    try:
                        produce(
                            part.work.remote_topic,
                            value=value,
                            key=key,
                            headers=headers,  # type: ignore[arg-type]  # null header values pass through
                            partition=partition,
                            timestamp=timestamp,
                        )
                        break
                    except BufferError:
                        self.producer.poll(0.05)
                    except KafkaException as exc:
                        error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
                        if error is not None and error.code() == KafkaError._UNKNOWN_PARTITION:
                            # The remote topic grew after this producer read its metadata: send it next epoch.
                            part.retry_from, self.stale_producer = offset, True
                            self._pause(part)
                            break
                        if error is None or not _refuses_record(error):
                            raise  # the producer itself is broken (fenced, fatal): retry the epoch
                        # refused before sending, e.g. too large for the client
                        part.fail(offset, f"{_describe(exc)} (writing {part.work.remote_topic}-{partition})")
                        self._pause(part)
                        break
                if part.paused:
                    continue
                part.in_flight.append(offset)
                part.last_produced = offset
                result = part.result
                result.records += 1
                result.bytes += len(value) if value else 0
                age = now_ms - timestamp
                result.age_ms_sum += age
                if age > result.age_ms_max:
                    result.age_ms_max = age
                if result.records >= self.spec.max_records_per_partition:
                    self._pause(part)
            self.producer.poll(0)

    def _pause(self, part: _Partition) -> None:
        part.paused = True
        self.consumer.pause([TopicPartition(part.work.source_topic, part.work.partition)])

    def on_delivery(self, err: KafkaError | None, msg: Message) -> None:
        """Per-record acknowledgement: progress, latency and offset-sync decisions."""
        part = self.by_remote.get((msg.topic() or "", msg.partition() or 0))
        if part is None or not part.in_flight:
            return
        upstream = part.in_flight.popleft()
        if err is not None:
            if _refuses_record(err):
                part.fail(
                    upstream, f"{err.name()}: {err.str()} (writing {part.work.remote_topic}-{part.work.partition})"
                )
            elif self.client_error is None:
                self.client_error = err  # not about this record: the whole epoch is retried
            return
        if part.result.failed_offset is not None and upstream > part.result.failed_offset:
            return
        downstream = msg.offset() or 0
        part.delivered_upto, part.delivered_downstream = upstream, downstream
        result = part.result
        latency = time.time() * 1000 - msg.timestamp()[1]
        result.latency_ms_sum += latency
        if latency > result.latency_ms_max:
            result.latency_ms_max = latency
        # Runs once per record: SyncPoints only for the few records that need one (last_sync is set at commit).
        if result.first_sync is None:
            result.first_sync = SyncPoint(upstream, downstream)
        if part.tracker.should_sync(upstream, downstream):
            part.syncs.append(SyncPoint(upstream, downstream))

    # -- commit ------------------------------------------------------------------------------------
    def _commit(self) -> TaskResult:
        remaining = self.producer.flush(FLUSH_TIMEOUT_S)
        if remaining:
            raise KafkaException(KafkaError(KafkaError._MSG_TIMED_OUT, f"{remaining} records not acknowledged"))
        if self.client_error is not None:
            raise KafkaException(self.client_error)
        failed = any(p.result.failed_offset is not None for p in self.parts.values())
        if self.in_transaction and failed:
            self.producer.abort_transaction(FLUSH_TIMEOUT_S)
            self.in_transaction = False
            for part in self.parts.values():  # nothing of this epoch was committed
                part.result.next_offset = part.result.start_offset
                part.result.records = part.result.bytes = 0
                part.result.first_sync = part.result.last_sync = None
            return TaskResult(self.spec.flow, self.spec.slot, list(p.result for p in self.parts.values()))
        for part in self.parts.values():
            part.result.next_offset = self._next_offset(part)
            if part.delivered_upto is not None:
                part.result.last_sync = SyncPoint(part.delivered_upto, part.delivered_downstream)
        self._write_progress()
        if self.in_transaction:
            self.producer.commit_transaction(FLUSH_TIMEOUT_S)
            self.in_transaction = False
        self._write_syncs()
        return TaskResult(self.spec.flow, self.spec.slot, list(p.result for p in self.parts.values()))

    def _next_offset(self, part: _Partition) -> int:
        """Where the next epoch starts: after the last acknowledged record, never past a refused one."""
        result = part.result
        if result.failed_offset is not None:
            return result.failed_offset
        if part.retry_from is not None:
            return part.retry_from if part.delivered_upto is None else min(part.retry_from, part.delivered_upto + 1)
        if part.delivered_upto is not None:
            return part.delivered_upto + 1
        if part.work.stop_before is None and part.last_produced is None:
            # nothing arrived: skip over transaction markers or compacted gaps the consumer moved past
            position = self.consumer.position([TopicPartition(part.work.source_topic, part.work.partition)])[0]
            if position.offset is not None and position.offset > result.start_offset:
                return int(position.offset)
        return result.start_offset

    def _write_progress(self) -> None:
        errors: list[str] = []

        def on_progress(err: KafkaError | None, _msg: Message) -> None:
            if err is not None:
                errors.append(f"{err.name()}: {err.str()}")

        for part in self.parts.values():
            result = part.result
            if result.next_offset == part.work.start_offset:
                continue  # unchanged: nothing to commit
            key = ProgressKey(self.spec.flow, result.source_topic, result.partition).encode()
            self.producer.produce(
                self.spec.progress_topic,
                value=encode_progress(
                    result.next_offset,
                    source_topic_id=part.work.source_topic_id,
                    remote_topic_id=part.work.remote_topic_id,
                ),
                key=key,
                partition=0,
                on_delivery=on_progress,
            )
        if not self.in_transaction:
            self.producer.flush(FLUSH_TIMEOUT_S)
            if errors:
                raise KafkaException(KafkaError(KafkaError._FAIL, f"progress not written: {errors[0]}"))

    def _write_syncs(self) -> None:
        if not self.spec.emit_offset_syncs:
            return
        producer = cached_producer(self.spec.sync_producer, _ignore_delivery)
        for part in self.parts.values():
            closing = part.tracker.closing_sync()
            if closing is not None:
                part.syncs.append(SyncPoint(*closing))
            for point in part.syncs:
                sync = OffsetSync(part.work.source_topic, part.work.partition, point.upstream, point.downstream)
                producer.produce(
                    self.spec.offset_syncs_topic, key=sync.record_key(), value=sync.record_value(), partition=0
                )
            part.result.syncs_written = len(part.syncs)
        producer.flush(FLUSH_TIMEOUT_S)

    def abandon(self) -> None:
        """After a failure: abort an open transaction and drop a producer that may be fenced or fatal."""
        _Router.current = None
        if self.in_transaction:
            with contextlib.suppress(KafkaException):
                self.producer.abort_transaction(10)
        forget_producer(self.spec.target_producer, _Router.on_delivery, self.transactional_id)


def _refuses_record(error: KafkaError) -> bool:
    """True when the target refused this record itself (size, format, permission, missing topic).

    Such a record stops its partition; anything else (a fenced or fatal producer, timeouts, transient broker
    errors) fails the task's epoch, which the driver retries from the committed progress.
    """
    return not (error.fatal() or error.retriable() or error.code() in _NOT_ABOUT_THE_RECORD)


# Errors that say a topic or partition does not exist (any more, or not yet).
_TOPIC_GONE = frozenset(
    {KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC, KafkaError._UNKNOWN_PARTITION, UNKNOWN_TOPIC_ID}
)
# A remote topic deleted on the target is not about the record either: the epoch is retried while the driver
# waits for the topic to come back.
_NOT_ABOUT_THE_RECORD = _TOPIC_GONE | {
    KafkaError._FENCED,
    KafkaError._FATAL,
    KafkaError._STATE,
    KafkaError._PURGE_QUEUE,
    KafkaError._PURGE_INFLIGHT,
    KafkaError._MSG_TIMED_OUT,
    KafkaError._TIMED_OUT,
    KafkaError._TRANSPORT,
    KafkaError._ALL_BROKERS_DOWN,
    KafkaError._DESTROY,
    KafkaError.INVALID_PRODUCER_EPOCH,
    KafkaError.PRODUCER_FENCED,
    KafkaError.INVALID_TXN_STATE,
    KafkaError.OUT_OF_ORDER_SEQUENCE_NUMBER,
    KafkaError.UNKNOWN_PRODUCER_ID,
}


# Most an uncompressed single-record v2 batch adds to its key and value bytes without headers: batch header,
# a 5-byte varint for the record length, attributes and deltas, two 5-byte length varints, header count.
_MAX_FRAMING = RECORD_BATCH_OVERHEAD + 5 + 3 + 5 + 5 + 1


def _surely_fits(key: bytes | None, value: bytes | None, headers: list[tuple[str, bytes]] | None, limit: int) -> bool:
    """True when the record cannot exceed `limit` whatever its exact framing: skips the exact count per record."""
    if headers:
        return False
    return _MAX_FRAMING + (len(key) if key else 0) + (len(value) if value else 0) <= limit


def _record_size(key: bytes | None, value: bytes | None, headers: list[tuple[str, bytes]] | None) -> int:
    """Bytes of an uncompressed v2 batch holding only this record: what the broker compares with max.message.bytes.

    Exact, so a record of exactly the target's limit is copied; with compression the batch may be smaller still.
    """
    body = 3  # attributes, timestamp delta 0 and offset delta 0: one byte each
    body += _field_size(key) + _field_size(value) + _varint_size(len(headers or ()))
    for name, data in headers or ():
        body += _field_size(name.encode()) + _field_size(data)
    return RECORD_BATCH_OVERHEAD + _varint_size(body) + body


def _field_size(data: bytes | None) -> int:
    """A length-prefixed field; null is written as length -1, one byte."""
    return 1 if data is None else _varint_size(len(data)) + len(data)


def _varint_size(length: int) -> int:
    """Bytes of the zig-zag varint of a non-negative `length`."""
    zigzag, size = length << 1, 1
    while zigzag >= 0x80:
        zigzag >>= 7
        size += 1
    return size


def _ignore_delivery(err: KafkaError | None, msg: Message) -> None:
    """Offset syncs are best effort (as in MM2): a lost one costs precision, never data."""


def _bounds(admin: Any, tps: list[TopicPartition]) -> tuple[dict[tuple[str, int], int], dict[tuple[str, int], int]]:
    """(earliest, latest) offsets of `tps`."""
    return _list_offsets(admin, tps, OffsetSpec.earliest()), _list_offsets(admin, tps, OffsetSpec.latest())


def _list_offsets(admin: Any, tps: list[TopicPartition], spec: OffsetSpec) -> dict[tuple[str, int], int]:
    """Offsets of `tps`; partitions of topics that no longer exist are left out, any other failure raises."""
    if not tps:
        return {}
    futures = admin.list_offsets({tp: spec for tp in tps}, request_timeout=LOOKUP_TIMEOUT_S)
    found: dict[tuple[str, int], int] = {}
    for tp, future in futures.items():
        try:
            found[(tp.topic, tp.partition)] = int(future.result(timeout=LOOKUP_TIMEOUT_S).offset)
        except KafkaException as exc:
            error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
            if error is None or error.code() not in _TOPIC_GONE:
                raise
    return found
