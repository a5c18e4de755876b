"""One source partition inside a long-lived copy task: what was sent, what the target acknowledged, syncs.

Invariant: `acked` only moves forward over records the target acknowledged, in order, and never reaches a
refused record, so the position a commit writes (`acked + 1`) never skips a record.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from services.data_mirror.resume import Resume, out_of_range
from services.data_mirror.sync_rules import SyncTracker
from services.data_mirror.work import PartitionWork
from shared.kafka.error_classes import ErrorClass, client_error_class
from shared.records.progress import CopyReport

MAX_ENDS_SEEN = 3600  # an hour of commits of a partition that stopped copying


@dataclass
class Clock:
    """The task loop's wall clock, read by delivery callbacks instead of asking the system once per record."""

    retry_s: float
    now_ms: float = 0.0


@dataclass
class PartitionCopy:
    """Mutable state of one partition for the life of a task; its delivery callback runs once per record."""

    work: PartitionWork
    committed: int | None  # the position last written to the progress topic, None before the first
    position: int  # where copying continues: the start, then past every acknowledged or skipped record
    tracker: SyncTracker
    clock: Clock
    in_flight: deque[int] = field(default_factory=deque)
    acked: int = -1  # upstream offset of the last acknowledged record, -1 before the first
    held_at: int | None = None  # consuming is paused at this offset until a retry is due
    refused_at: int | None = None  # the record the target refused; the partition waits there
    refused_now: bool = False  # refused inside this task's open transaction (exactly-once must abort it)
    failure: str | None = None
    blocked_since_ms: int | None = None
    retry_at_ms: float = 0.0
    paused: bool = False
    delivery_error: Any = None  # a KafkaError not about one record: the task fails and restarts from Kafka
    end_offset: int | None = None
    reported_end: int | None = None
    # counts since the last progress record
    records: int = 0
    bytes: int = 0
    age_ms_sum: float = 0.0
    age_ms_max: float = 0.0
    latency_ms_sum: float = 0.0
    latency_ms_max: float = 0.0
    acked_records: int = 0
    expired: int = 0
    expired_from: int | None = None
    expired_to: int | None = None
    reset_from: int | None = None  # a position copying went back from (reported once), and where it went on
    reset_to: int | None = None
    diverged_at: int | None = None  # the source log was truncated under the position: go back here (KIP-320)
    fetched_next: int = 0  # record path: the offset after the last record consumed (a smaller one is a rewind)
    leader_epoch: int | None = None  # the source leader epoch of the fetch position (progress keeps it)
    syncs_sent: int = 0
    forwarded: int = 0
    dropped: int = 0  # records the flow's transforms dropped since the last report
    returned: int = 0  # records not copied since the last report: their provenance names the target (came from it)
    provenance_ignored: int = 0  # provenance headers not on the topic their path names: copied as originals
    reencoded_reason: str | None = None
    deliver: Any = None  # the bound `on_delivery`, made once (a bound method per produce call costs)
    # (end offset, when first seen) for each end the source showed beyond what is copied, oldest first: the first
    # one past the position tells since when the oldest record not yet copied has been there (`behind_since`)
    ends_seen: deque[tuple[int, int]] = field(default_factory=deque)
    behind_since_ms: int | None = None  # as of the last commit
    # Why the source cannot be read now (no leader, topic not found): the task looks again and releases it
    source_hold: str | None = None
    source_hold_at: int | None = None  # where reading goes on once it can
    source_held_since_ms: int | None = None
    reported_blocked: bool = False  # the last report said blocked: the next one is written even when quiet

    def __post_init__(self) -> None:
        self.deliver = self.on_delivery

    def on_delivery(self, err: Any, msg: Any) -> None:
        """The producer's per-record acknowledgement (called from poll/flush, in send order per partition)."""
        upstream = self.in_flight.popleft()
        if upstream == self.diverged_at and err is None:
            self.rewind()  # the first record consumed again after a truncation: what was in flight before answered
        if err is not None:
            if client_error_class(err) is ErrorClass.REFUSE_RECORD:  # else: not about this record
                where = f"writing {self.work.remote_topic}-{self.work.partition}"
                self.refuse(upstream, f"{err.name()}: {err.str()} ({where})")
            elif self.delivery_error is None:
                self.delivery_error = err
            return
        if self.refused_at is not None:
            if upstream > self.refused_at:
                return  # sent before the refusal was known: not copied, as far as progress is concerned
            if upstream == self.refused_at:
                self.refused_at = self.failure = self.blocked_since_ms = None  # the retried record went through
        downstream = msg.offset()
        self.tracker.delivered(upstream, downstream)
        self.acked = upstream
        self.acked_records += 1
        latency = self.clock.now_ms - msg.timestamp()[1]
        self.latency_ms_sum += latency
        if latency > self.latency_ms_max:
            self.latency_ms_max = latency

    def landed(self, upstream: Sequence[int], downstream_base: int, newest_timestamp_ms: float) -> None:
        """A batch the target acknowledged: record `i` of it has upstream offset `upstream[i]` (batch forwarding).

        A `range` is a forwarded batch (consecutive on both sides); a list holds re-encoded records' offsets."""
        self.in_flight.popleft()
        if not upstream:
            return
        if self.refused_at is not None:
            if upstream[0] > self.refused_at:
                return  # sent before the refusal was known: not copied, as far as progress is concerned
            if upstream[0] <= self.refused_at <= upstream[-1]:
                self.refused_at = self.failure = self.blocked_since_ms = None  # the retried record went through
        if isinstance(upstream, range):
            self.tracker.delivered_run(upstream[0], downstream_base, len(upstream))
        else:
            for index, offset in enumerate(upstream):
                self.tracker.delivered(offset, downstream_base + index)
        self.acked = upstream[-1]
        self.acked_records += len(upstream)
        if newest_timestamp_ms < 0:
            return  # no timestamps (message format v0)
        latency = self.clock.now_ms - newest_timestamp_ms
        self.latency_ms_sum += latency * len(upstream)
        if latency > self.latency_ms_max:
            self.latency_ms_max = latency

    def refuse(self, offset: int, reason: str) -> None:
        """The target refused the record at `offset`: wait there, and try it again after the retry interval."""
        if self.refused_at is None or offset < self.refused_at:
            self.refused_at, self.failure = offset, reason
        self.refused_now = True
        self.held_at = self.refused_at
        if self.blocked_since_ms is None:
            self.blocked_since_ms = int(self.clock.now_ms)
        self.retry_at_ms = self.clock.now_ms + self.clock.retry_s * 1000

    def stop_at_corrupt(self, offset: int, what: str) -> None:
        """The source's batch at `offset` fails its checksum: never copied (a new CRC would launder the damage);
        the partition waits there like a refused record and reads it again after the retry interval."""
        where = f"{self.work.source_topic}-{self.work.partition}"
        self.refuse(offset, f"corrupt record batch on the source at {where} offset {offset}: {what}")

    def hold_on_source(self, reason: str, offset: int) -> None:
        """The source cannot be read at `offset` now (no leader, topic not found): held, reported as blocked on
        the source, and looked at again by the task (the other partitions copy meanwhile)."""
        if self.source_held_since_ms is None:
            self.source_held_since_ms = int(self.clock.now_ms)
        self.source_hold, self.source_hold_at = reason, offset

    def source_released(self) -> int:
        """The source answers again: where reading goes on."""
        offset = self.position if self.source_hold_at is None else self.source_hold_at
        self.source_hold = self.source_hold_at = self.source_held_since_ms = None
        return offset

    def wait_at(self, offset: int, reason: str, since_ms: int) -> None:
        """A refusal an earlier task committed: copy up to it, then wait until its retry is due."""
        self.refused_at = self.held_at = offset
        self.failure, self.blocked_since_ms = reason, since_ms
        self.retry_at_ms = since_ms + self.clock.retry_s * 1000

    def retry_due(self) -> bool:
        """The refused record waited long enough and everything before it is acknowledged: try it again."""
        return (
            self.held_at is not None
            and self.refused_at is not None
            and self.clock.now_ms >= self.retry_at_ms
            and not self.in_flight
            and self.next_position() == self.refused_at
        )

    def release(self) -> int:
        """Send from the refused record again (it stays reported as blocked until acknowledged); returns it."""
        assert self.refused_at is not None
        self.held_at, self.refused_now = None, False
        return self.refused_at

    def skip_out_of_range(self, position: int, low: int, high: int, *, to_latest: bool) -> int:
        """The source no longer holds `position` (retention passed it, or the partition now ends before it):
        where copying goes on (`resume.out_of_range`). `position` is not moved here: records still in flight land
        first. Forwards, the skipped records are counted as expired and the task's idle-position step moves the
        position once the partition is settled; backwards, the log from there on is handled as a divergence and
        the copier rewinds once what is in flight answered."""
        where = out_of_range(position, low, high, to_latest=to_latest)
        if where.why is Resume.BACKWARDS:
            self.diverge(where.offset)  # `rewind` reports the reset
        elif where.why is Resume.EXPIRED:
            self.expire(position, where.offset)
        return where.offset

    def expire(self, position: int, resume: int) -> None:
        """The records from `position` up to `resume` are gone from the source (retention): counted as expired
        with their range, never silently; a refusal waiting among them is dropped (that record is gone)."""
        self.expired += resume - position
        self.expired_from = position if self.expired_from is None else min(self.expired_from, position)
        self.expired_to = resume if self.expired_to is None else max(self.expired_to, resume)
        if self.refused_at is not None and self.refused_at < resume:
            self.refused_at = self.held_at = self.failure = self.blocked_since_ms = None
            self.refused_now = False

    def diverge(self, offset: int) -> None:
        """The source's log from `offset` on is not what was copied (truncated by an unclean leader election):
        from now on no commit or hand-over writes a position past it, until `rewind` copies it again."""
        self.diverged_at = offset if self.diverged_at is None else min(self.diverged_at, offset)

    def rewind(self) -> None:
        """Copy again from where the log diverged (with nothing in flight, so no answer moves past it again); a
        refusal at or after it is dropped (that record is gone)."""
        assert self.diverged_at is not None
        offset, self.diverged_at = self.diverged_at, None
        self.reset_from, self.reset_to = max(self.position, self.acked + 1), offset
        self.position, self.acked = offset, min(self.acked, offset - 1)
        if self.refused_at is not None and self.refused_at >= offset:
            self.refused_at = self.held_at = self.failure = self.blocked_since_ms = None
            self.refused_now = False

    def next_position(self) -> int:
        """Where a restart would continue: after the last acknowledged record, never past a refused one."""
        position = max(self.position, self.acked + 1)
        if self.diverged_at is not None:
            position = min(position, self.diverged_at)
        return position if self.refused_at is None else min(position, self.refused_at)

    def note_end(self, now_ms: int) -> int | None:
        """At a commit: remember the source's end if it moved, forget ends that are copied now, and say since when
        the oldest record not yet copied has been on the source (None: nothing behind). Precise to a commit
        interval; a partition always a little behind under steady traffic stays young, as its records do."""
        ends, position = self.ends_seen, self.next_position()
        end = self.end_offset
        if end is not None and end > position and (not ends or end > ends[-1][0]):
            if len(ends) >= MAX_ENDS_SEEN:
                ends.pop()  # the newest goes: an age is never reported younger than it is
            ends.append((end, now_ms))
        while ends and ends[0][0] <= position:
            ends.popleft()
        if end is not None and end <= position:
            ends.clear()
        return ends[0][1] if ends else None

    def settled(self) -> bool:
        """Nothing in flight and nothing refused: the consumer's position may stand for the partition's."""
        return not self.in_flight and self.refused_at is None and self.held_at is None

    def report(self, syncs_failed: int = 0, read_errors: int = 0, behind_since_ms: int | None = None) -> CopyReport:
        """What happened since the last progress record; resets the counters."""
        blocked_offset, reason, since, blocked_on = self.refused_at, self.failure, self.blocked_since_ms, None
        if blocked_offset is None and self.source_hold is not None:
            blocked_offset = self.next_position() if self.source_hold_at is None else self.source_hold_at
            reason, since, blocked_on = self.source_hold, self.source_held_since_ms, "source"
        self.reported_blocked = blocked_offset is not None
        acked = self.acked_records
        report = CopyReport(
            records=self.records,
            bytes=self.bytes,
            latency_ms_avg=round(self.latency_ms_sum / acked, 1) if acked else None,
            latency_ms_max=round(self.latency_ms_max, 1) if acked else None,
            age_ms_avg=round(self.age_ms_sum / self.records, 1) if self.records else None,
            age_ms_max=round(self.age_ms_max, 1) if self.records else None,
            end_offset=self.end_offset,
            expired=self.expired,
            expired_from=self.expired_from,
            expired_to=self.expired_to,
            reset_from=self.reset_from,
            reset_to=self.reset_to,
            blocked_offset=blocked_offset,
            blocked_reason=reason if blocked_offset is not None else None,
            blocked_since_ms=since if blocked_offset is not None else None,
            blocked_on=blocked_on,
            syncs=self.syncs_sent,
            syncs_failed=syncs_failed,
            read_errors=read_errors,
            forwarded=self.forwarded,
            reencoded_reason=self.reencoded_reason,
            dropped=self.dropped,
            returned=self.returned,
            provenance_ignored=self.provenance_ignored,
            behind_since_ms=behind_since_ms,
        )
        self.records = self.bytes = self.acked_records = self.expired = self.syncs_sent = self.forwarded = 0
        self.dropped = self.returned = self.provenance_ignored = 0
        self.reencoded_reason = None
        self.age_ms_sum = self.age_ms_max = self.latency_ms_sum = self.latency_ms_max = 0.0
        self.reset_from = self.reset_to = self.expired_from = self.expired_to = None
        self.reported_end = self.end_offset
        return report
