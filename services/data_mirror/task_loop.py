"""The long-lived Spark copy task: keeps its partitions and clients until the driver asks it to hand over.

Runs in a Spark Python worker; pure apart from the clients it is given. One loop for both ways of copying: it
starts each partition from the progress committed on the target (read after an exactly-once producer fenced any
earlier task of the slot, never from what the driver remembers), lets the copier move records, and every commit
interval writes each moved partition's progress (at-least-once: the position after the last record the target
acknowledged; exactly-once: in the producer transaction that holds the records) and the offset syncs. It never
stops copying to commit. A hand-over commits once more, after the target answered everything sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import structlog
from confluent_kafka import KafkaException

from services.data_mirror.copier import (
    FLUSH_TIMEOUT_S,
    Copier,
    FetchPosition,
    TaskFailed,
    Transactions,
    describe,
)
from services.data_mirror.partition_copy import Clock, PartitionCopy
from services.data_mirror.resume import Resume, committed_start, diverged_below, made_again, out_of_range
from services.data_mirror.sync_rules import EARLY_COMMIT_GAP_S, MAX_PENDING_SYNCS, SyncBudget, SyncTracker
from services.data_mirror.task_clients import TaskClients
from services.data_mirror.work import TaskResult, TaskSpec
from shared.partition_key import PartitionKey
from shared.records.offset_sync import SYNC_SEGMENT_HEADER, OffsetSync, SyncSegment
from shared.records.progress import Progress, ProgressKey, encode_progress

HANDOVER_CHECK_S = 0.25
ABANDON_TIMEOUT_S = 10  # a failed task gives its open transaction this long to abort
SOURCE_LOOK_AGAIN_S = 5.0  # how often partitions held on the source (no leader, topic not found) are looked at
NO_SOURCE_OFFSETS = "the source gave no offsets for it (no leader, or the topic not found): looked at again"
EPOCH_NOT_ANSWERED = (
    "no source leader said where the leader epoch of the committed position ends (a truncated log cannot be told"
    " apart): asked again"
)

_log = structlog.get_logger("data-mirror.task")


def _describe_failure(exc: BaseException) -> str:
    """The error and, for anything but a Kafka or task error, where it was raised (a bug needs its place)."""
    if isinstance(exc, KafkaException | TaskFailed):
        return describe(exc)
    frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    where = f" at {Path(frame.filename).name}:{frame.lineno}" if frame else ""
    return f"{describe(exc)}{where}"


class TaskLoop:
    """One execution of a TaskSpec: `copier` moves the records, `clients` give the rest (`run` closes both).

    `transactions` is the copier's producer transaction in an exactly-once flow, None otherwise
    (`task_entry.task_loop` picks both for a spec)."""

    def __init__(
        self,
        spec: TaskSpec,
        clients: TaskClients,
        copier: Copier,
        clock: Clock,
        transactions: Transactions | None = None,
    ) -> None:
        self.spec = spec
        self.clients = clients
        self.copier = copier
        self.transactions = transactions
        self.clock = clock  # the copier's too: it reads the time when it wakes, the partitions' callbacks use it
        self.parts: dict[PartitionKey, PartitionCopy] = {}
        self.in_transaction = False
        self.commits = 0
        self.syncs_failed = 0
        self.sync_budget = SyncBudget()
        self.progress_error: str | None = None
        self.start_phases: dict[str, float] = {}  # seconds per start-up step, logged once copying begins
        self.unplaced: dict[PartitionKey, Progress | None] = {}  # held before their start was known
        self.next_source_look = 0.0

    def run(self) -> TaskResult:
        """Start, copy until a hand-over is requested, commit; on failure abort what is uncommitted."""
        spec = self.spec
        try:
            asyncio.run(self._run())
            error = None
        except Exception as exc:
            self._abandon()
            error = _describe_failure(exc)
        finally:
            with contextlib.suppress(Exception):
                self.clients.close()
        return TaskResult(
            spec.flow,
            spec.slot,
            spec.generation,
            error=error,
            records=self.copier.records,
            commits=self.commits,
            partitions=len(self.parts),
        )

    async def _run(self) -> None:
        try:
            with self._phase("open"):  # exactly-once on the batch path: the slot's earlier producers are fenced here
                await self.copier.open()
            self._start()
            self.copier.assign(self.parts)
            for part in self.parts.values():
                if part.source_hold is not None:
                    self.copier.hold(part)
            self._begin()
            _log.info(
                "task_copying",
                flow=self.spec.flow,
                slot=self.spec.slot,
                partitions=len(self.parts),
                seconds={name: round(value, 2) for name, value in self.start_phases.items()},
            )
            await self._copy()
            await self._commit(final=True)
        finally:
            with contextlib.suppress(Exception):
                await self.copier.close()

    # -- start -----------------------------------------------------------------------------------------
    def _start(self) -> None:
        """Positions from the committed progress (read after fencing), bounded by what the source still holds
        (blocking look-ups: the copier's clients are connected but nothing of them runs before `assign`)."""
        self.clock.now_ms = time.time() * 1000
        with self._phase("progress"):
            committed = self.clients.load_progress()
        keys = [work.key for work in self.spec.partitions]
        with self._phase("offsets"):
            earliest, latest = self.clients.offset_bounds(keys)
        for work in self.spec.partitions:
            progress = committed.get(work.key)
            committed_at = None if progress is None else progress.next_offset
            # With syncs off a tracker queues none (so it asks for no commit); it still counts the jumps.
            room = MAX_PENDING_SYNCS if self.spec.emit_offset_syncs else 0
            tracker = SyncTracker(self.spec.offset_lag_max, max_pending=room, budget=self.sync_budget)
            part = PartitionCopy(work, committed_at, committed_at or 0, tracker, self.clock)
            self.parts[work.key] = part
            if work.key not in earliest or work.key not in latest:
                # No leader now, or the topic is gone (the driver's next refresh drops it): held, not failing the
                # slot's other partitions, and looked at again
                self.unplaced[work.key] = progress
                part.hold_on_source(NO_SOURCE_OFFSETS, part.position)
                continue
            low, high = earliest[work.key], latest[work.key]
            part.end_offset = high
            self._place(part, progress, low, high)
        with self._phase("epochs"):
            self._check_epochs(earliest, [key for key in self.parts if key not in self.unplaced])

    @contextlib.contextmanager
    def _phase(self, name: str) -> Iterator[None]:
        """Time one start-up step (at thousands of partitions the look-ups are where start-up goes)."""
        began = time.monotonic()
        try:
            yield
        finally:
            self.start_phases[name] = time.monotonic() - began

    def _check_epochs(self, log_starts: dict[PartitionKey, int], keys: list[PartitionKey]) -> set[PartitionKey]:
        """A log truncated under a committed position while no task ran (an unclean leader election): each source
        leader is asked where the committed position's leader epoch ends now (KIP-320, one request per leader);
        an end before the position is where the log diverged, and copying starts again there. A position past
        the log end that did not diverge is reset as auto.offset.reset says; one no leader answered for is held
        (a guess could copy twice or skip) and asked again later, while the other partitions copy."""
        asked = {
            key: (part.leader_epoch, part.position)
            for key in keys
            if (part := self.parts[key]).leader_epoch is not None
        }
        found = diverged_below(self.clients, asked)
        for key in sorted(set(asked) - set(found)):
            part = self.parts[key]
            part.hold_on_source(EPOCH_NOT_ANSWERED, part.position)
        for key, diverged in found.items():
            part = self.parts[key]
            if diverged is not None:
                part.reset_from, part.reset_to, part.position = part.position, diverged, diverged
            elif part.end_offset is not None and part.position > part.end_offset:
                where = out_of_range(
                    part.position, log_starts[key], part.end_offset, to_latest=self.spec.reset_to_latest
                )
                part.reset_from, part.reset_to, part.position = part.position, where.offset, where.offset
        return set(asked) - set(found)

    def _place(self, part: PartitionCopy, progress: Progress | None, low: int, high: int) -> None:
        """Where `part` starts: its committed position, unless the topic was made again or the source moved."""
        work = part.work
        again = progress is not None and (
            made_again(progress.source_topic_id, work.source_topic_id)
            or made_again(progress.remote_topic_id, work.remote_topic_id)
        )
        where = committed_start(
            None if progress is None else progress.next_offset,
            low,
            high,
            to_latest=self.spec.reset_to_latest,
            made_again=again,
            epoch_known=progress is not None and progress.leader_epoch is not None,
        )
        part.position = where.offset
        if progress is None:
            return
        if where.why is Resume.BACKWARDS:
            part.reset_from, part.reset_to = progress.next_offset, where.offset
        elif where.why is Resume.EXPIRED:
            part.expire(progress.next_offset, where.offset)
        if where.why is Resume.AT_POSITION:
            part.leader_epoch = progress.leader_epoch  # checked before the first fetch
        start = where.offset
        report = progress.report
        if report is None or report.blocked_on == "source":
            return  # held on the source: looked at afresh
        if report.blocked_offset is not None and report.blocked_offset >= start:
            since = report.blocked_since_ms or int(self.clock.now_ms)
            part.wait_at(report.blocked_offset, report.blocked_reason or "refused by the target", since)

    def _begin(self) -> None:
        if self.transactions is not None:
            self.transactions.begin()
            self.in_transaction = True

    # -- copy ------------------------------------------------------------------------------------------
    async def _copy(self) -> None:
        """Let the copier work; commit every interval (at once when a refusal dooms the open transaction, when the
        offset syncs waiting reach their budget, or, exactly-once, when the copy caught up with its source) and look
        for a hand-over request four times a second."""
        interval_s = self.spec.commit_interval_ms / 1000
        now = time.monotonic()
        next_commit, next_check = now + interval_s, now + HANDOVER_CHECK_S
        last_commit = now
        committed_records = self.copier.records
        next_catch_up_check = now  # the positions of every partition are read at most every EARLY_COMMIT_GAP_S
        step = self.copier.step
        while True:
            await step()
            now = time.monotonic()
            if now >= next_check:
                next_check = now + HANDOVER_CHECK_S
                if self.clients.handover_requested():
                    return
            early = now - last_commit >= EARLY_COMMIT_GAP_S
            syncs_due = early and self.sync_budget.due
            caught_up = False
            if early and now >= next_catch_up_check and self.copier.records > committed_records:
                next_catch_up_check = now + EARLY_COMMIT_GAP_S
                caught_up = self._transaction_caught_up()
            if now >= next_commit or syncs_due or caught_up or self._refused_in_transaction():
                await self._commit(final=False)
                last_commit = time.monotonic()
                next_commit = last_commit + interval_s
                committed_records = self.copier.records

    def _transaction_caught_up(self) -> bool:
        """Exactly-once: the open transaction holds every record its partitions' sources had when last read, so
        nothing is gained by keeping it open (MM2 commits at every poll): a read_committed reader of the target sees
        a copy that caught up without waiting for the interval. A partition whose source end is not known yet, or
        that is read below it (a backlog, an open source transaction), keeps the interval."""
        if not self.in_transaction:
            return False
        positions = self.copier.positions()
        for key, part in self.parts.items():
            if part.paused:
                continue
            fetch = positions.get(key)
            end = part.end_offset if fetch is None or fetch.end_offset is None else fetch.end_offset
            if end is None or fetch is None or fetch.next_offset is None or fetch.next_offset < end:
                return False
        return True

    def _refused_in_transaction(self) -> bool:
        """Exactly-once: a refused record dooms the open transaction; end it now rather than copy into it."""
        return self.in_transaction and any(p.refused_now for p in self.parts.values())

    # -- commit ----------------------------------------------------------------------------------------
    async def _commit(self, *, final: bool) -> None:
        """Write every changed partition's progress (and syncs); exactly-once: in the records' transaction."""
        await self.copier.settle(wait=final or self.in_transaction)
        self._raise_client_errors()
        if self._refused_in_transaction():
            await self._abort_for_refused_records()
        self._advance_idle_positions(self.copier.positions())
        written = self._write_progress()
        if self.transactions is not None and self.in_transaction:
            await self.copier.settle(wait=True)  # the progress answered: a progress record not written commits nothing
            self._raise_client_errors()
            await self.transactions.commit()
            self.in_transaction = False
        elif final:
            await self.copier.settle(wait=True)  # the last progress is answered before the task says it is done
            self._raise_client_errors()
        for part, position in written:
            part.committed = position
        self.commits += 1
        self._write_syncs(final=final)
        self._retry_refused()
        if not final:
            self._look_at_source()
            self._begin()

    def _raise_client_errors(self) -> None:
        if self.progress_error is not None:
            raise TaskFailed(f"progress not written: {self.progress_error}")
        for part in self.parts.values():
            if part.delivery_error is not None:
                raise KafkaException(part.delivery_error)

    async def _abort_for_refused_records(self) -> None:
        """Exactly-once: roll the interval back, record where each refused partition waits, start again."""
        assert self.transactions is not None
        await self.transactions.abort()
        self.transactions.begin()
        refused = [p for p in self.parts.values() if p.refused_now]
        for part in refused:
            self._send_progress(part, part.committed if part.committed is not None else part.position)
        await self.copier.settle(wait=True)
        await self.transactions.commit()
        self.in_transaction = False
        raise TaskFailed(f"{len(refused)} partitions stopped at a refused record; resuming from the committed progress")

    def _advance_idle_positions(self, positions: dict[PartitionKey, FetchPosition]) -> None:
        """Move past offsets the copier skipped without a record (transaction markers, compacted gaps, records a
        transform dropped), also up to a refused record the copier reached with nothing in flight (else its retry,
        due only once the partition stands at it, never came)."""
        for key, part in self.parts.items():
            fetch = positions.get(key)
            if fetch is None:
                continue
            if fetch.leader_epoch is not None and fetch.leader_epoch >= 0 and not part.paused:
                part.leader_epoch = fetch.leader_epoch  # a held partition keeps the epoch of what it read
            if fetch.end_offset is not None and fetch.end_offset >= 0:
                part.end_offset = fetch.end_offset
            settled = part.settled() and not part.paused
            if settled and fetch.next_offset is not None and fetch.next_offset > part.next_position():
                part.position = fetch.next_offset
            waiting = part.refused_at
            if waiting is not None and not part.in_flight and (fetch.next_offset or -1) >= waiting > part.position:
                part.position = waiting

    def _write_progress(self) -> list[tuple[PartitionCopy, int]]:
        """A progress record for each partition whose position, end, refusal or counts changed."""
        written = []
        now_ms = int(self.clock.now_ms or time.time() * 1000)
        for part in self.parts.values():
            part.behind_since_ms = part.note_end(now_ms)
            position = part.next_position()
            quiet = (
                part.records == 0
                and part.expired == 0
                and part.dropped == 0
                and part.returned == 0
                and part.provenance_ignored == 0
                and part.reset_from is None
                and part.refused_at is None
                and part.source_hold is None
                and not part.reported_blocked
            )
            if quiet and position == part.committed and part.end_offset == part.reported_end:
                continue
            self._send_progress(part, position)
            written.append((part, position))
        return written

    def _send_progress(self, part: PartitionCopy, position: int) -> None:
        work = part.work
        part.position = position
        syncs_failed, self.syncs_failed = self.syncs_failed, 0
        value = encode_progress(
            position,
            source_topic_id=work.source_topic_id,
            remote_topic_id=work.remote_topic_id,
            report=part.report(syncs_failed, self.copier.take_read_errors(), part.behind_since_ms),
            leader_epoch=part.leader_epoch,
        )
        self.copier.write_progress(ProgressKey(self.spec.flow, *work.key).encode(), value, self._on_progress_failure)

    def _on_progress_failure(self, error: str) -> None:
        if self.progress_error is None:
            self.progress_error = error

    def _write_syncs(self, *, final: bool) -> None:
        sync_producer = self.clients.sync_producer
        for part in self.parts.values():
            syncs = part.tracker.take()
            if sync_producer is None:
                continue  # syncs are off: the commit's last-record sync is dropped here
            for pending in syncs:
                sync = OffsetSync(part.work.source_topic, part.work.partition, pending.upstream, pending.downstream)
                segment = SyncSegment(part.tracker.writer, pending.jumps, opens=pending.opens)
                try:
                    sync_producer.produce(
                        self.spec.offset_syncs_topic,
                        key=sync.record_key(),
                        value=sync.record_value(),
                        headers=[(SYNC_SEGMENT_HEADER, segment.encode())],
                        partition=0,
                        on_delivery=self.on_sync,
                    )
                except BufferError:  # the producer's queue is full (the syncs' cluster slow or away)
                    self.syncs_failed += 1  # best effort, as a failed delivery: counted, the copy goes on
                    continue
                part.syncs_sent += 1
        self.sync_budget.all_taken()
        if sync_producer is None:
            return
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
                self.copier.release(part, part.release())

    def _look_at_source(self) -> None:
        """Partitions held on the source (no leader, topic not found, an epoch not answered) are looked at again:
        each the source gives offsets (and, for a committed position, its epoch's end) for is read again."""
        held = [key for key, part in self.parts.items() if part.source_hold is not None and part.paused]
        if not held or time.monotonic() < self.next_source_look:
            return
        self.next_source_look = time.monotonic() + SOURCE_LOOK_AGAIN_S
        try:
            earliest, latest = self.clients.offset_bounds(held)
        except Exception as exc:  # the source still does not answer: held, asked again later
            _log.info("source_still_unavailable", flow=self.spec.flow, partitions=len(held), error=describe(exc))
            return
        answered = [key for key in held if key in earliest and key in latest]
        to_check = []
        midway: dict[PartitionKey, tuple[int, int]] = {}  # held while copying: (its epoch, where it was held)
        for key in answered:
            part = self.parts[key]
            part.end_offset = latest[key]
            if key in self.unplaced:
                self._place(part, self.unplaced.pop(key), earliest[key], latest[key])
                to_check.append(key)
            elif part.source_hold == EPOCH_NOT_ANSWERED:
                to_check.append(key)
            elif part.leader_epoch is not None:
                midway[key] = (part.leader_epoch, part.position if part.source_hold_at is None else part.source_hold_at)
        still = self._check_epochs(earliest, to_check)
        # A leader lost is when an unclean election truncates a log: a partition held while copying is read again
        # only once a leader said whether its log diverged below where it was held (not answered: held, asked again)
        diverged = diverged_below(self.clients, midway)
        for key in answered:
            part = self.parts[key]
            if key in still or (key in midway and key not in diverged):
                continue
            if (offset := diverged.get(key)) is not None:
                part.source_released()
                self.copier.rewind(part, offset)
                continue
            self.copier.release(part, part.position if key in to_check else part.source_released())
            part.source_released()

    def _abandon(self) -> None:
        """After a failure: abort an open transaction; nothing uncommitted counts."""
        if self.transactions is not None and self.in_transaction:
            with contextlib.suppress(Exception):
                self.transactions.abandon(ABANDON_TIMEOUT_S)
            self.in_transaction = False
