"""Copying record by record: a confluent consumer on the source, a confluent producer on the target.

The copier exactly-once flows use (the producer's transaction holds the records and their progress), and any
flow that does not forward batches. Each record is produced with its partition's delivery callback, which moves
the partition's acknowledged position (`PartitionCopy.on_delivery`). Its clients are blocking: a step waits in
the consumer for at most IDLE_WAIT_S, which is all the event loop has to do in this mode.
"""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from services.data_mirror.copier import (
    FLUSH_TIMEOUT_S,
    FetchPosition,
    ProgressFailed,
    TaskFailed,
    describe,
)
from services.data_mirror.partition_copy import Clock, PartitionCopy
from services.data_mirror.record_size import record_size, surely_fits
from services.data_mirror.resume import Resume, diverged_below, out_of_range
from services.data_mirror.task_clients import TaskClients
from services.data_mirror.work import TaskSpec
from shared.kafka.error_classes import ErrorClass, client_error_class, kafka_error_of
from shared.kafka.message_headers import HeaderKeyNotUtf8, message_headers
from shared.partition_key import PartitionKey
from shared.reshape.mirror_record import MirrorRecord
from shared.reshape.python_transforms import TransformFailed

CONSUME_BATCH = 5000
IDLE_WAIT_S = 0.05
UNKNOWN_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAA"  # brokers before Kafka 2.8 have no topic ids: all zeros
# confluent-kafka reads and writes header keys as str: such a record cannot be copied record by record
NOT_UTF8_HEADER = "a header key that is not UTF-8: copying record by record (confluent-kafka) cannot write it"


class RecordCopier:
    """Consume, produce with a per-partition callback; the producer's transaction when the flow is exactly-once."""

    def __init__(self, spec: TaskSpec, clients: TaskClients, clock: Clock) -> None:
        self.spec = spec
        self.clients = clients
        self.clock = clock
        self.consumer = clients.consumer
        self.producer = clients.producer
        self.parts: dict[PartitionKey, PartitionCopy] = {}
        self.records = 0
        self.read_errors = 0
        self.reshaper = spec.reshaper()
        self.reshaped = bool(self.reshaper)  # records change on their way: the slower step

    async def open(self) -> None:
        """The clients were connected with the task (the producer's transactions initialised, fencing)."""

    async def close(self) -> None:
        """The task's clients close them (`TaskClients.close`)."""

    def assign(self, parts: dict[PartitionKey, PartitionCopy]) -> None:
        self.parts = parts
        assignment = [TopicPartition(*key, part.position) for key, part in parts.items()]
        if assignment:
            self.consumer.assign(assignment)

    # -- the hot loop -------------------------------------------------------------------------------------
    async def step(self) -> None:
        """Consume what is there (waiting up to IDLE_WAIT_S for the first record when nothing is), produce it."""
        consumer, producer, parts, clock, reshaped = self.consumer, self.producer, self.parts, self.clock, self.reshaped
        produce, poll = producer.produce, producer.poll
        messages = consumer.consume(CONSUME_BATCH, 0)
        if not messages:
            poll(0)
            first = consumer.poll(IDLE_WAIT_S)  # returns as soon as a record arrives: no batching delay
            messages = [first] if first is not None else []
        now_ms = clock.now_ms = time.time() * 1000
        for msg in messages:
            if msg.error() is not None:
                self._consumer_error(msg)
                continue
            part = parts.get((msg.topic(), msg.partition()))
            if part is None or part.paused:
                continue
            offset = msg.offset()
            if part.held_at is not None and offset >= part.held_at:
                self.hold(part)
                continue
            if offset < part.fetched_next:  # the consumer went back on its own: the source log was truncated
                part.diverge(offset)
            part.fetched_next = offset + 1
            epoch = msg.leader_epoch()
            if epoch is not None:  # the epoch of the position, as a truncation check asks it (an older one misleads)
                part.leader_epoch = epoch
            try:
                headers = message_headers(msg)
            except HeaderKeyNotUtf8:
                part.refuse(offset, NOT_UTF8_HEADER)  # stops this partition only, reported and retried later
                self.hold(part)
                continue
            key, value = msg.key(), msg.value()
            timestamp = msg.timestamp()[1]
            if reshaped:
                kept = self._transformed(part, offset, key, value, headers, timestamp)
                if kept is None:
                    continue  # dropped (a gap on the target, as on a compacted topic), or its transform failed
                key, value, headers, timestamp = kept.key, kept.value, kept.headers, kept.timestamp
            limit = part.work.max_record_bytes
            if (
                limit is not None
                and not surely_fits(key, value, headers, limit)
                and self._too_large(part, offset, key, value, headers, limit)
            ):
                continue
            while True:
                try:
                    produce(
                        part.work.remote_topic,
                        value,
                        key,
                        partition=part.work.partition,
                        timestamp=timestamp,
                        headers=headers,
                        on_delivery=part.deliver,
                    )
                    break
                except BufferError:
                    poll(0.05)
                except KafkaException as exc:
                    error = kafka_error_of(exc)
                    if error is None or client_error_class(error) is not ErrorClass.REFUSE_RECORD:
                        raise  # the producer itself is broken (fenced, fatal): restart from the committed progress
                    where = f"writing {part.work.remote_topic}-{part.work.partition}"
                    part.refuse(offset, f"{describe(exc)} ({where})")
                    self.hold(part)
                    break
            if part.paused:
                continue
            part.in_flight.append(offset)
            part.records += 1
            if value:
                part.bytes += len(value)
            age = now_ms - timestamp
            part.age_ms_sum += age
            if age > part.age_ms_max:
                part.age_ms_max = age
        self.records += len(messages)
        poll(0)

    def _transformed(
        self, part: PartitionCopy, offset: int, key: Any, value: Any, headers: Any, timestamp: int
    ) -> MirrorRecord | None:
        """The record after the flow's transforms and its provenance header (`reshape`), or None when it is not
        copied. A transform that fails stops the partition at the record, as a record the target refuses does
        (reported, retried later)."""
        work = part.work
        record = MirrorRecord(work.remote_topic, work.partition, offset, key, value, list(headers or ()), timestamp)
        try:
            return self.reshaper.one(part, record)
        except TransformFailed as exc:
            part.refuse(offset, str(exc))
            self.hold(part)
            return None

    def _too_large(self, part: PartitionCopy, offset: int, key: Any, value: Any, headers: Any, limit: int) -> bool:
        size = record_size(key, value, headers)
        if size <= limit:
            return False
        reason = f"record of {size} bytes is larger than max.message.bytes={limit} of {part.work.remote_topic}"
        part.refuse(offset, reason)
        self.hold(part)
        return True

    # -- what the source said -----------------------------------------------------------------------------
    def _consumer_error(self, msg: Any) -> None:
        error = msg.error()
        if error.code() == KafkaError._PARTITION_EOF:
            return
        kind = client_error_class(error, reading=True, consumer=True)
        if kind is ErrorClass.RETRY:  # librdkafka retries it (a new leader: after new metadata, and validating its
            # position, KIP-320); counted and reported, so a struggling source shows
            self.read_errors += 1
            return
        part = self.parts.get((msg.topic() or "", msg.partition() or 0))
        if part is not None and part.paused:
            # Stopped (a corrupt batch, a refused record, a deleted topic): read again only from where it stopped,
            # assigned anew when released. What the consumer still says about it comes from a read no longer
            # trusted: after a CRC failure librdkafka 2.16 reads on from inside the damaged batch and reports a
            # made-up batch (_NOT_IMPLEMENTED at a garbage offset), then that offset out of range.
            return
        if error.code() == KafkaError._AUTO_OFFSET_RESET and part is not None:
            self._out_of_range(part, msg.offset())
            return
        if error.code() == KafkaError._BAD_MSG and part is not None:
            self._corrupt_on_source(part, msg.offset(), error.str())
            return
        if error.code() == KafkaError._NOT_IMPLEMENTED and part is not None:
            # A batch the consumer cannot parse: the offset it names is not to be trusted, the position is.
            self._corrupt_on_source(part, None, error.str())
            return
        if kind is ErrorClass.TOPIC_GONE and part is not None:
            # deleted on the source (the driver's next refresh drops it), or not known for a moment: held, reported,
            # and looked at again by the task loop
            part.hold_on_source(
                "topic not found on the source: looked at again", max(part.fetched_next, part.next_position())
            )
            self.hold(part)
            return
        raise KafkaException(error)

    def _out_of_range(self, part: PartitionCopy, position: int | None) -> None:
        """The consumer's fetch `position` is no longer in the source partition (the consumer reports this instead
        of resetting on its own, `auto.offset.reset=error`; after its own epoch check found the log truncated, with
        no offset): go on where the log diverged if it did, else where auto.offset.reset says, counting every
        record skipped."""
        truncated = position is None or position < 0  # the consumer's own check (KIP-320) found the log truncated
        if position is None or position < 0:
            position = max(part.fetched_next, part.next_position())
        earliest, latest = self.clients.offset_bounds([part.work.key])  # (failing: the task starts again)
        low, high = earliest.get(part.work.key), latest.get(part.work.key)
        if low is None or high is None:
            part.hold_on_source("topic not found on the source: looked at again", position)
            self.hold(part)  # the topic is gone, or not known for a moment: looked at again
            return
        # Past the end, or reported truncated although the new leader has written past the position since: only
        # the epoch tells whether the records below the position are still those copied.
        answered, diverged = self._diverged_below(part, position) if truncated or position > high else (True, None)
        if not answered:
            # No leader said whether the log diverged below the position (it moved again, or is not reachable yet):
            # the task starts again from its committed progress, whose epoch is checked before anything is fetched.
            raise TaskFailed(
                f"no source leader said where the log of {part.work.source_topic}-{part.work.partition} diverged"
                f" below offset {position} (epoch {part.leader_epoch}); starting again from the committed position"
            )
        where = out_of_range(position, low, high, to_latest=self.spec.reset_to_latest, diverged=diverged)
        if where.why is Resume.BACKWARDS:  # truncated under us (an unclean election), made again, or truncated
            # with no epoch to say where: the progress goes back with the copy, or a restart would skip the new
            # log's records up to the old position
            self.rewind(part, where.offset)
            return
        if where.why is Resume.EXPIRED:
            part.expire(position, where.offset)
        self.release(part, where.offset)

    def rewind(self, part: PartitionCopy, offset: int) -> None:
        self._wait_in_flight(part)
        part.diverge(offset)
        part.rewind()
        self.release(part, part.position)

    def _wait_in_flight(self, part: PartitionCopy) -> None:
        """What was sent before a rewind answers first, so no answer of it moves the partition past where it goes
        back to once that is copied again (the record there may be a marker, never delivered)."""
        remaining = self.producer.flush(FLUSH_TIMEOUT_S)
        if remaining or part.in_flight:
            raise TaskFailed(f"{remaining} records not acknowledged within {FLUSH_TIMEOUT_S}s")

    def _diverged_below(self, part: PartitionCopy, position: int) -> tuple[bool, int | None]:
        """(answered, where the log diverged below `position` or None). Not answered: a look-up failed. Answered
        without a divergence, so auto.offset.reset decides: no epoch known, or the topic is not surely the one
        copied (a topic made again under the same name starts at epoch 0 too, and would answer like a truncation:
        its id must be known and unchanged)."""
        if part.leader_epoch is None or part.work.source_topic_id in (None, UNKNOWN_TOPIC_ID):
            return True, None
        topic = part.work.source_topic
        try:
            if self.clients.source_topic_ids([topic]).get(topic) != part.work.source_topic_id:
                return True, None
        except Exception:  # not answered: the caller starts the task again
            return False, None
        found = diverged_below(self.clients, {part.work.key: (part.leader_epoch, position)})
        return part.work.key in found, found.get(part.work.key)

    def _corrupt_on_source(self, part: PartitionCopy, offset: int | None, what: str) -> None:
        """The consumer (checking CRCs) found a corrupt source batch at `offset` (None: somewhere from the next
        record on): its partition stops there, never past a record not yet read."""
        reached = max(part.fetched_next, part.next_position())
        part.stop_at_corrupt(offset if offset is not None and offset >= reached else reached, what)
        self.hold(part)

    # -- the loop's requests --------------------------------------------------------------------------------
    def hold(self, part: PartitionCopy) -> None:
        if not part.paused:
            part.paused = True
            self.consumer.pause([TopicPartition(*part.work.key)])

    def release(self, part: PartitionCopy, offset: int) -> None:
        """Read the partition again from `offset` (a retry, or where an out-of-range position goes on). Assigned
        again rather than sought: after an out-of-range report the consumer no longer fetches it and refuses a seek
        (_STATE), and a corrupt batch ends in one (librdkafka reports its made-up next batch out of range), which
        failed the task at every retry."""
        part.paused, part.fetched_next = False, offset
        tp = TopicPartition(*part.work.key, offset)
        self.consumer.incremental_unassign([TopicPartition(*part.work.key)])
        self.consumer.incremental_assign([tp])
        self.consumer.resume([tp])  # a pause outlives the assignment

    def positions(self) -> dict[PartitionKey, FetchPosition]:
        keys = list(self.parts)
        found = {}
        for key, tp in zip(keys, self.consumer.position([TopicPartition(*key) for key in keys]), strict=True):
            epoch = getattr(tp, "leader_epoch", None)
            watermarks = self.consumer.get_watermark_offsets(TopicPartition(*key), cached=True)
            found[key] = FetchPosition(
                None if tp.offset is None or tp.offset < 0 else int(tp.offset),
                epoch if epoch is not None and epoch >= 0 else None,
                int(watermarks[1]) if watermarks and watermarks[1] >= 0 else None,
            )
        return found

    async def settle(self, *, wait: bool) -> None:
        if not wait:
            self.producer.poll(0)
            return
        remaining = self.producer.flush(FLUSH_TIMEOUT_S)
        if remaining:
            raise TaskFailed(f"{remaining} records not acknowledged within {FLUSH_TIMEOUT_S}s")

    def write_progress(self, key: bytes, value: bytes, on_failure: ProgressFailed) -> None:
        def delivered(err: Any, _msg: Any) -> None:
            if err is not None:
                on_failure(f"{err.name()}: {err.str()}")

        self.producer.produce(self.spec.progress_topic, value=value, key=key, partition=0, on_delivery=delivered)

    def take_read_errors(self) -> int:
        errors, self.read_errors = self.read_errors, 0
        return errors

    # -- exactly-once -----------------------------------------------------------------------------------
    def begin(self) -> None:
        self.producer.begin_transaction()

    async def commit(self) -> None:
        try:
            self.producer.commit_transaction(FLUSH_TIMEOUT_S)
        except KafkaException as exc:
            raise TaskFailed(f"commit failed, resuming from the committed progress: {describe(exc)}") from exc

    async def abort(self) -> None:
        self.producer.abort_transaction(FLUSH_TIMEOUT_S)

    def abandon(self, timeout_s: float) -> None:
        self.producer.abort_transaction(timeout_s)
