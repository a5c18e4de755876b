"""The long-lived Spark copy task: keeps its partitions, consumer and producer until the driver asks it to hand over.

Runs in a Spark Python worker; pure apart from the clients it is given. It never stops consuming to commit:
every commit interval it writes each partition's progress (at-least-once: the position after the last record
the target acknowledged; exactly-once: in the producer transaction that holds the records) and the offset
syncs. It starts from the progress committed on the target, read after its transactional id fenced any
earlier task of the slot, never from what the driver remembers.
"""

from __future__ import annotations

import contextlib
import time
import traceback
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from services.data_mirror.partition_copy import Clock, PartitionCopy, refuses_record
from services.data_mirror.record_size import record_size, surely_fits
from services.data_mirror.sync_rules import SyncTracker
from services.data_mirror.task_clients import TaskClients
from services.data_mirror.work import TaskResult, TaskSpec
from shared.kafka.cluster_errors import TOPIC_GONE
from shared.records.offset_sync import SYNC_SEGMENT_HEADER, OffsetSync, SyncSegment
from shared.records.progress import Progress, ProgressKey, encode_progress

CONSUME_BATCH = 5000
IDLE_WAIT_S = 0.05
HANDOVER_CHECK_S = 0.25
FLUSH_TIMEOUT_S = 60
UNKNOWN_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAA"  # brokers before Kafka 2.8 have no topic ids: all zeros
LEADER_MOVED = frozenset({KafkaError.FENCED_LEADER_EPOCH, KafkaError.UNKNOWN_LEADER_EPOCH})


class TaskFailed(Exception):
    """The task cannot go on; the driver starts the slot again and it resumes from the committed progress."""


def describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _describe_failure(exc: BaseException) -> str:
    """The error and, for anything but a Kafka or task error, where it was raised (a bug needs its place)."""
    if isinstance(exc, KafkaException | TaskFailed):
        return describe(exc)
    frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    where = f" at {Path(frame.filename).name}:{frame.lineno}" if frame else ""
    return f"{describe(exc)}{where}"


class CopyTask:
    """One execution of a TaskSpec with the clients it is given (`run` closes them)."""

    def __init__(self, spec: TaskSpec, clients: TaskClients) -> None:
        self.spec = spec
        self.clients = clients
        self.clock = Clock(retry_s=spec.blocked_retry_s)
        self.parts: dict[tuple[str, int], PartitionCopy] = {}
        self.in_transaction = False
        self.records = 0
        self.commits = 0
        self.syncs_failed = 0
        self.read_errors = 0
        self.progress_error: str | None = None

    def run(self) -> TaskResult:
        """Start, copy until a hand-over is requested, commit; on failure abort what is uncommitted."""
        spec = self.spec
        try:
            self._start()
            self._copy()
            self._commit(final=True)
            return TaskResult(
                spec.flow,
                spec.slot,
                spec.generation,
                records=self.records,
                commits=self.commits,
                partitions=len(self.parts),
            )
        except Exception as exc:
            self._abandon()
            return TaskResult(
                spec.flow,
                spec.slot,
                spec.generation,
                error=_describe_failure(exc),
                records=self.records,
                commits=self.commits,
                partitions=len(self.parts),
            )
        finally:
            with contextlib.suppress(Exception):
                self.clients.close()

    # -- start -----------------------------------------------------------------------------------------
    def _start(self) -> None:
        """Positions from the committed progress (after fencing), bounded by what the source still holds."""
        self.clock.now_ms = time.time() * 1000
        committed = self.clients.load_progress()
        keys = [work.key for work in self.spec.partitions]
        earliest, latest = self.clients.offset_bounds(keys)
        for work in self.spec.partitions:
            if work.key not in earliest or work.key not in latest:
                continue  # the topic is gone from the source: the driver's next refresh drops it
            low, high = earliest[work.key], latest[work.key]
            progress = committed.get(work.key)
            committed_at = None if progress is None else progress.next_offset
            part = PartitionCopy(work, committed_at, low, SyncTracker(self.spec.offset_lag_max), self.clock)
            part.end_offset = high
            self._place(part, progress, low, high)
            self.parts[work.key] = part
        self._check_epochs()
        self._assign()
        if self.spec.exactly_once:
            self.clients.producer.begin_transaction()
            self.in_transaction = True

    def _check_epochs(self) -> None:
        """A log truncated under a committed position while no task ran (an unclean leader election): each source
        leader is asked where the committed position's leader epoch ends now (KIP-320, one request per leader);
        an end before the position is where the log diverged, and copying starts again there."""
        asked = {key: part.leader_epoch for key, part in self.parts.items() if part.leader_epoch is not None}
        for key, end in self.clients.epoch_ends(asked).items():
            part = self.parts[key]
            if end < part.position:
                part.reset_from, part.position = part.position, end

    def _assign(self) -> None:
        assignment = [TopicPartition(*key, part.position) for key, part in self.parts.items()]
        if assignment:
            self.clients.consumer.assign(assignment)

    def _place(self, part: PartitionCopy, progress: Progress | None, low: int, high: int) -> None:
        """Where `part` starts: its committed position, unless the topic was made again or the source moved."""
        work = part.work
        if progress is None:
            part.position = high if self.spec.reset_to_latest else low
            return
        start = progress.next_offset
        made_again = _differs(progress.source_topic_id, work.source_topic_id) or _differs(
            progress.remote_topic_id, work.remote_topic_id
        )
        if made_again:
            part.reset_from, start = start, low
        elif start < low:
            start = part.skip_out_of_range(start, low, high, to_latest=False)  # (copies what is left, as MM2 does)
        elif start > high:
            # The source partition ends before our position (made again, or truncated by an unclean leader
            # election): what is there now is not what we copied. auto.offset.reset says where to go, as in MM2.
            part.reset_from, start = start, high if self.spec.reset_to_latest else low
        part.position = start
        if start == progress.next_offset:
            part.leader_epoch = progress.leader_epoch  # checked before the first fetch (batch forwarding)
        report = progress.report
        if report is not None and report.blocked_offset is not None and report.blocked_offset >= start:
            since = report.blocked_since_ms or int(self.clock.now_ms)
            part.wait_at(report.blocked_offset, report.blocked_reason or "refused by the target", since)

    # -- copy ------------------------------------------------------------------------------------------
    def _copy(self) -> None:
        """The hot loop: consume, produce with a per-partition callback, commit and check for a hand-over."""
        consumer, producer, parts, clock = self.clients.consumer, self.clients.producer, self.parts, self.clock
        consume, produce, poll = consumer.consume, producer.produce, producer.poll
        interval_s = self.spec.commit_interval_ms / 1000
        now = time.monotonic()
        next_commit, next_check = now + interval_s, now + HANDOVER_CHECK_S
        while True:
            messages = consume(CONSUME_BATCH, 0)
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
                    self._hold(part)
                    continue
                if offset < part.fetched_next:  # the consumer went back on its own: the source log was truncated
                    part.diverge(offset)
                part.fetched_next = offset + 1
                key, value, headers = msg.key(), msg.value(), msg.headers()
                limit = part.work.max_record_bytes
                if (
                    limit is not None
                    and not surely_fits(key, value, headers, limit)
                    and self._too_large(part, offset, key, value, headers, limit)
                ):
                    continue
                timestamp = msg.timestamp()[1]
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
                        error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
                        if error is None or not refuses_record(error):
                            raise  # the producer itself is broken (fenced, fatal): restart from the committed progress
                        where = f"writing {part.work.remote_topic}-{part.work.partition}"
                        part.refuse(offset, f"{describe(exc)} ({where})")
                        self._hold(part)
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
            now = time.monotonic()
            if now >= next_check:
                next_check = now + HANDOVER_CHECK_S
                if self.clients.handover_requested():
                    return
            if now >= next_commit or self._must_commit_now():
                self._commit(final=False)
                next_commit = time.monotonic() + interval_s

    def _too_large(self, part: PartitionCopy, offset: int, key: Any, value: Any, headers: Any, limit: int) -> bool:
        size = record_size(key, value, headers)
        if size <= limit:
            return False
        reason = f"record of {size} bytes is larger than max.message.bytes={limit} of {part.work.remote_topic}"
        part.refuse(offset, reason)
        self._hold(part)
        return True

    def _must_commit_now(self) -> bool:
        """Exactly-once: a refused record dooms the open transaction; end it now rather than copy into it."""
        return self.in_transaction and any(p.refused_now for p in self.parts.values())

    def _consumer_error(self, msg: Any) -> None:
        error = msg.error()
        if error.code() == KafkaError._PARTITION_EOF:
            return
        if error.retriable() or error.code() in LEADER_MOVED:  # librdkafka retries it (a new leader: after new
            # metadata, and validating its position, KIP-320); counted and reported, so a struggling source shows
            self.read_errors += 1
            return
        part = self.parts.get((msg.topic() or "", msg.partition() or 0))
        if error.code() == KafkaError._AUTO_OFFSET_RESET and part is not None:
            self._out_of_range(part, msg.offset())
            return
        if error.code() == KafkaError._BAD_MSG and part is not None:
            self._corrupt_on_source(part, msg.offset(), error.str())
            return
        if error.code() in TOPIC_GONE and part is not None:
            self._hold(part)  # deleted on the source: the driver's next refresh drops it
            return
        raise KafkaException(error)

    def _out_of_range(self, part: PartitionCopy, position: int | None) -> None:
        """The consumer's fetch `position` is no longer in the source partition (the consumer reports this instead
        of resetting on its own, `auto.offset.reset=error`): go on where auto.offset.reset says, counting every
        record skipped."""
        if position is None or position < 0:
            position = part.next_position()
        earliest, latest = self.clients.offset_bounds([part.work.key])
        low, high = earliest.get(part.work.key), latest.get(part.work.key)
        if low is None or high is None:
            self._hold(part)  # the topic is gone: the driver's next refresh drops it
            return
        diverged = self._diverged_below(part, position) if position > high else None
        if diverged is not None:  # truncated under us (an unclean election): copy again from where it diverged
            # What was sent before the truncation answers first, so no answer of it moves the partition past the
            # divergence once it is copied again (the record at the divergence may be a marker, never delivered).
            remaining = self.clients.producer.flush(FLUSH_TIMEOUT_S)
            if remaining or part.in_flight:
                raise TaskFailed(f"{remaining} records not acknowledged within {FLUSH_TIMEOUT_S}s")
            part.diverge(diverged)
            part.rewind()
            resume = diverged
        elif low <= position <= high:
            resume = position
        else:
            resume = part.skip_out_of_range(position, low, high, to_latest=self.spec.reset_to_latest)
        # After its out-of-range error the consumer no longer fetches the partition and refuses a seek (_STATE):
        # it is assigned again at the new position.
        consumer = self.clients.consumer
        consumer.incremental_unassign([TopicPartition(*part.work.key)])
        consumer.incremental_assign([TopicPartition(*part.work.key, resume)])
        part.paused, part.fetched_next = False, resume

    def _diverged_below(self, part: PartitionCopy, position: int) -> int | None:
        """The source partition ends before `position`: if the leader epoch of our position now ends below it
        (KIP-320, as the Java consumer checks after a leader change), the log was truncated there and what
        follows is new; otherwise None, and auto.offset.reset decides: no epoch known, or the topic is not surely
        the one copied (a topic made again under the same name starts at epoch 0 too, and would answer like a
        truncation: its id must be known and unchanged)."""
        if part.leader_epoch is None or part.work.source_topic_id in (None, UNKNOWN_TOPIC_ID):
            return None
        topic = part.work.source_topic
        try:
            if self.clients.source_topic_ids([topic]).get(topic) != part.work.source_topic_id:
                return None
            end = self.clients.epoch_ends({part.work.key: part.leader_epoch}).get(part.work.key)
        except Exception:  # a look-up failed: auto.offset.reset decides, as before epochs; counted, so it shows
            self.read_errors += 1
            return None
        return end if end is not None and end < position else None

    def _corrupt_on_source(self, part: PartitionCopy, offset: int | None, what: str) -> None:
        """The consumer (checking CRCs) found a corrupt source record: its partition stops there."""
        part.stop_at_corrupt(
            offset if offset is not None and offset >= part.next_position() else part.next_position(), what
        )
        self._hold(part)

    def _hold(self, part: PartitionCopy) -> None:
        if not part.paused:
            part.paused = True
            self.clients.consumer.pause([TopicPartition(*part.work.key)])

    def _release(self, part: PartitionCopy, offset: int) -> None:
        part.paused, part.fetched_next = False, offset
        tp = TopicPartition(*part.work.key, offset)
        self.clients.consumer.seek(tp)
        self.clients.consumer.resume([tp])

    # -- commit ----------------------------------------------------------------------------------------
    def _commit(self, *, final: bool) -> None:
        """Write every changed partition's progress (and syncs); exactly-once: in the records' transaction."""
        producer = self.clients.producer
        if final or self.in_transaction:
            remaining = producer.flush(FLUSH_TIMEOUT_S)
            if remaining:
                raise TaskFailed(f"{remaining} records not acknowledged within {FLUSH_TIMEOUT_S}s")
        else:
            producer.poll(0)
        self._raise_client_errors()
        if self._must_commit_now():
            self._abort_for_refused_records()
        self._advance_idle_positions()
        written = self._write_progress()
        if self.in_transaction:
            try:
                producer.commit_transaction(FLUSH_TIMEOUT_S)
            except KafkaException as exc:
                raise TaskFailed(f"commit failed, resuming from the committed progress: {describe(exc)}") from exc
            self.in_transaction = False
        for part, position in written:
            part.committed = position
        self.commits += 1
        self._write_syncs(final=final)
        self._retry_refused()
        if self.spec.exactly_once and not final:
            producer.begin_transaction()
            self.in_transaction = True

    def _raise_client_errors(self) -> None:
        if self.progress_error is not None:
            raise TaskFailed(f"progress not written: {self.progress_error}")
        for part in self.parts.values():
            if part.delivery_error is not None:
                raise KafkaException(part.delivery_error)

    def _abort_for_refused_records(self) -> None:
        """Exactly-once: roll the interval back, record where each refused partition waits, start again."""
        producer = self.clients.producer
        producer.abort_transaction(FLUSH_TIMEOUT_S)
        producer.begin_transaction()
        refused = [p for p in self.parts.values() if p.refused_now]
        for part in refused:
            self._send_progress(part, part.committed if part.committed is not None else part.position)
        producer.commit_transaction(FLUSH_TIMEOUT_S)
        self.in_transaction = False
        raise TaskFailed(f"{len(refused)} partitions stopped at a refused record; resuming from the committed progress")

    def _advance_idle_positions(self) -> None:
        """Move past offsets the consumer skipped without a record (transaction markers, compacted gaps)."""
        parts = list(self.parts.values())
        positions = self.clients.consumer.position([TopicPartition(*part.work.key) for part in parts])
        for part, tp in zip(parts, positions, strict=True):
            epoch = getattr(tp, "leader_epoch", None)
            if epoch is not None and epoch >= 0:
                part.leader_epoch = epoch  # of the fetch position: what a restart checks its position against
            settled = part.settled() and not part.paused
            if settled and tp.offset is not None and tp.offset > part.next_position():
                part.position = int(tp.offset)
        for part in self.parts.values():
            low_high = self.clients.consumer.get_watermark_offsets(TopicPartition(*part.work.key), cached=True)
            if low_high and low_high[1] >= 0:
                part.end_offset = int(low_high[1])

    def _write_progress(self) -> list[tuple[PartitionCopy, int]]:
        """A progress record for each partition whose position, end, refusal or counts changed."""
        written = []
        for part in self.parts.values():
            position = part.next_position()
            quiet = part.records == 0 and part.expired == 0 and part.reset_from is None and part.refused_at is None
            if quiet and position == part.committed and part.end_offset == part.reported_end:
                continue
            self._send_progress(part, position)
            written.append((part, position))
        return written

    def _send_progress(self, part: PartitionCopy, position: int) -> None:
        work = part.work
        part.position = position
        syncs_failed, self.syncs_failed = self.syncs_failed, 0
        read_errors, self.read_errors = self.read_errors, 0
        self.clients.producer.produce(
            self.spec.progress_topic,
            value=encode_progress(
                position,
                source_topic_id=work.source_topic_id,
                remote_topic_id=work.remote_topic_id,
                report=part.report(syncs_failed, read_errors),
                leader_epoch=part.leader_epoch,
            ),
            key=ProgressKey(self.spec.flow, *work.key).encode(),
            partition=0,
            on_delivery=self._on_progress,
        )

    def _on_progress(self, err: Any, _msg: Any) -> None:
        if err is not None and self.progress_error is None:
            self.progress_error = f"{err.name()}: {err.str()}"

    def _write_syncs(self, *, final: bool) -> None:
        sync_producer = self.clients.sync_producer
        if sync_producer is None:
            return
        for part in self.parts.values():
            syncs = part.tracker.take()
            part.syncs_sent += len(syncs)
            for pending in syncs:
                sync = OffsetSync(part.work.source_topic, part.work.partition, pending.upstream, pending.downstream)
                segment = SyncSegment(part.tracker.writer, pending.jumps)
                sync_producer.produce(
                    self.spec.offset_syncs_topic,
                    key=sync.record_key(),
                    value=sync.record_value(),
                    headers=[(SYNC_SEGMENT_HEADER, segment.encode())],
                    partition=0,
                    on_delivery=self.on_sync,
                )
        if final:
            sync_producer.flush(FLUSH_TIMEOUT_S)
        else:
            sync_producer.poll(0)

    def on_sync(self, err: Any, _msg: Any) -> None:
        """Offset syncs are best effort (as in MM2): a lost one costs precision, never data; it is counted."""
        if err is not None:
            self.syncs_failed += 1

    def _retry_refused(self) -> None:
        for part in self.parts.values():
            if part.retry_due():
                self._release(part, part.release())

    def _abandon(self) -> None:
        """After a failure: abort an open transaction; nothing uncommitted counts."""
        if self.in_transaction:
            with contextlib.suppress(Exception):
                self.clients.producer.abort_transaction(10)
            self.in_transaction = False


def _differs(known: str | None, current: str | None) -> bool:
    """True when a topic id we knew differs from the topic's id now (deleted and created again meanwhile)."""
    return known is not None and current is not None and known != current
