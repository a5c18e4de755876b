"""One flow's audit state and rounds (blocking; the job runs a round in a worker thread).

Each partition is watched from the mirror's position when the audit first sees it: every later range the mirror
reports copied (its progress) is read on both clusters and aligned, continuing on the target where the previous
range ended, so each record is read once. A round reads at most its byte budget; what does not fit waits for the
next round (the lag metric shows it). With sampling, a range not drawn is skipped and counted, and the target
position is found again through the offset syncs. The target is compared with what the flow's transforms and
provenance make of the source (`shared/verify/expected.py`); a source record a transform fails on in the audit is
verified up to, then skipped and named.
"""

from __future__ import annotations

import random
from collections import deque
from contextlib import closing
from dataclasses import dataclass, field

import structlog

from services.audit.findings import AuditTotals
from shared.flow_context import FlowContext
from shared.kafka.digest_reader import PartitionEntries
from shared.kafka.end_offsets import committed_watermarks
from shared.kafka.partition_reader import PartitionReader
from shared.progress_store import ProgressFollower, load_progress
from shared.reshape.effect import ChainEffect
from shared.verify.align import Frame, RangeAlignment, align_range
from shared.verify.blocks import Entry
from shared.verify.expected import ChainStopped, ExpectedSource, PartitionPair, flow_reshaper
from shared.verify.sync_index import SyncIndex

AUDIT_READER_GROUP = "strait-audit"
RECENT_CARRIED = 2_000  # verified entries kept per partition between rounds: a replay across ranges is a duplicate
BYTES_PER_RECORD_FIRST_GUESS = 1024

_log = structlog.get_logger("audit")


@dataclass
class _Watched:
    source_next: int  # the first source offset not yet verified
    target_next: int | None  # where the copy of `source_next` starts on the target; None: find it through the syncs
    recent: deque[Entry] = field(default_factory=deque)
    deferred_at: int | None = None  # a tail the target did not hold yet was left from here to the next round
    unplaced_at: int | None = None  # no sync placed the range from here last round (the mirror writes syncs after
    # the progress that names their records: a partition's first sync may come a moment after its first progress)


@dataclass(frozen=True)
class AuditLimits:
    """How much one round may do."""

    budget_bytes: int
    sample_percent: float
    window: int
    timeout_s: float


class FlowAudit:
    """The audit of one flow while this instance leads it."""

    def __init__(self, context: FlowContext, limits: AuditLimits) -> None:
        flow = self.flow = context.flow
        self.limits = limits
        self.totals = AuditTotals()
        self.positions: dict[tuple[str, int], int] = {}  # what the audit has verified up to, per source partition
        self._topics = context.topics
        self._reshaper = flow_reshaper(flow, context.topics.policy)
        self._source = PartitionEntries(flow.source_consumer_props(), timeout_s=limits.timeout_s)
        self._target = PartitionEntries(flow.target_consumer_props(), timeout_s=limits.timeout_s)
        progress = context.progress_topic
        self._progress_follower = ProgressFollower(flow.target_consumer_props(), progress, flow.name)
        self._copied = {
            key: value.next_offset
            for key, value in load_progress(flow.target_consumer_props(), progress, flow.name).items()
        }
        place = context.offset_syncs
        self._syncs_reader = PartitionReader(place.consumer_props(flow), place.topic, group_id=AUDIT_READER_GROUP)
        self._syncs = SyncIndex()
        self._watched: dict[tuple[str, int], _Watched] = {}
        self._bytes_per_record = BYTES_PER_RECORD_FIRST_GUESS
        self._random = random.Random()

    def close(self) -> None:
        """Leave every cluster."""
        for client in (self._source, self._target, self._progress_follower, self._syncs_reader):
            client.close()

    def round(self) -> None:
        """Verify what the mirror copied since the last round, up to the byte budget."""
        for key, progress in self._progress_follower.poll():
            self._copied[key] = progress.next_offset
            watched = self._watched.get(key)
            if watched is not None and progress.next_offset < watched.source_next:
                self._rewind(key, watched, progress.next_offset)
        due = self._due()
        if due:  # (the mirror has copied, so its offset-syncs topic exists)
            self._syncs = SyncIndex.of_more(self._syncs, self._syncs_reader, self.limits.timeout_s)
            self._verify(due)
        self.totals.lag_records = sum(
            max(0, self._copied.get(key, 0) - watched.source_next) for key, watched in self._watched.items()
        )

    def _due(self) -> list[tuple[str, int]]:
        due: list[tuple[str, int]] = []
        for key, copied_to in self._copied.items():
            if not self._topics.should_replicate(key[0]):
                continue
            watched = self._watched.get(key)
            if watched is None:  # from now on: the audit verifies what lands after it started
                self._watched[key] = _Watched(copied_to, None)
                self.positions[key] = copied_to
                continue
            if copied_to <= watched.source_next:
                continue
            if self._random.uniform(0, 100) >= self.limits.sample_percent:
                self.totals.sampled_out += copied_to - watched.source_next
                self._skip_to(key, watched, copied_to)
                continue
            due.append(key)
        return due

    def _rewind(self, key: tuple[str, int], watched: _Watched, offset: int) -> None:
        """The mirror's progress went back (a divergence rewind, a topic made again): it copies from `offset`
        again, into a target log the audit has not read, so the audit verifies again from there."""
        self._skip_to(key, watched, offset)
        watched.deferred_at = watched.unplaced_at = None

    def _skip_to(self, key: tuple[str, int], watched: _Watched, offset: int) -> None:
        watched.source_next, watched.target_next = offset, None
        watched.recent.clear()
        self.positions[key] = offset

    def _verify(self, due: list[tuple[str, int]]) -> None:
        remote = {key: (self._topics.remote_topic(key[0]), key[1]) for key in due}
        # The progress read first, then the source's marks, then the target's: the target holds at least what the
        # progress says was copied, so a record it lacks is missing, not late.
        source_marks = committed_watermarks(self.flow.source_admin_props(), due, timeout_s=self.limits.timeout_s)
        target_marks = committed_watermarks(
            self.flow.target_admin_props(), list(remote.values()), timeout_s=self.limits.timeout_s
        )
        budget = self.limits.budget_bytes
        for key in due:
            if budget <= 0:
                break
            watched = self._watched[key]
            low, high = source_marks[key]
            if low > watched.source_next:
                self.totals.expired += low - watched.source_next
                self._skip_to(key, watched, low)
            end = min(self._copied[key], watched.source_next + max(1, budget // self._bytes_per_record))
            if end <= watched.source_next:
                continue
            pair = PartitionPair(key[0], self._topics.remote_topic(key[0]), key[1])
            drops_all = self._reshaper.effect(pair) is ChainEffect.DROPS_ALL  # nothing copied: no sync to wait for
            if watched.target_next is None and not drops_all and not self._syncs.locator(*key):
                if watched.unplaced_at != watched.source_next:  # its sync may still be on its way: one more round
                    watched.unplaced_at = watched.source_next
                    continue
                self.totals.unplaced += end - watched.source_next  # no sync says where its copy starts
                self._skip_to(key, watched, end)
                continue
            peek_to = min(high, end + self.limits.window)  # the records copied next: where this range's copies end
            budget -= self._verify_range(key, watched, (low, end, peek_to), target_marks[remote[key]])

    def _verify_range(
        self, key: tuple[str, int], watched: _Watched, source: tuple[int, int, int], target_marks: tuple[int, int]
    ) -> int:
        """Verify source offsets source_next..end-1 (`source` is log start, end, and how far to read past the end)."""
        topic, partition = key
        low, end, peek_to = source
        remote = self._topics.remote_topic(topic)
        locate = self._syncs.locator(topic, partition)
        target_low, target_high = target_marks
        start = watched.target_next
        if start is None:
            start = locate.downstream_before(watched.source_next)
        start = target_low if start is None else max(start, target_low)
        read_before = (self._source.counter.bytes + self._target.counter.bytes, self._source.counter.records)
        pair = PartitionPair(topic, remote, partition)

        def aligned_range(to: int, defer: bool) -> tuple[RangeAlignment, ExpectedSource]:
            expected = ExpectedSource(self._reshaper, pair, range_end=to, keep_offsets=True)
            source_blocks = self._source.blocks(topic, partition, watched.source_next, max(to, peek_to))
            target_blocks = self._target.blocks(remote, partition, start, target_high)
            with closing(source_blocks), closing(target_blocks):
                aligned = align_range(
                    expected.blocks(source_blocks),
                    expected.target(target_blocks),
                    Frame(log_start=low, source_from=watched.source_next, source_to=to, copied_to=to),
                    locate=locate,
                    window=self.limits.window,
                    recent=watched.recent,
                    defer=defer,
                )
            return aligned, expected

        # A tail the target does not hold yet waits for the next round (a transaction's markers may land a
        # moment after the progress); the same tail still absent a round later is settled as it stands. A record a
        # transform fails on ends the range; once everything before it is verified, it is skipped.
        failed: ChainStopped | None = None
        while True:
            try:
                aligned, expected = aligned_range(end, defer=True)
                if aligned.next_source_offset == watched.source_next == watched.deferred_at:
                    aligned, expected = aligned_range(end, defer=False)
                break
            except ChainStopped as exc:
                failed, end = ChainStopped(exc.offset, exc.message), exc.offset
                if end == watched.source_next:
                    self._skip_failed(key, watched, failed)
                    return self._spent(read_before)
        self.totals.add(topic, partition, aligned.found)
        dropped, returned = expected.not_copied.below(aligned.next_source_offset)
        self.totals.dropped += dropped
        self.totals.returned += returned
        self.totals.target_own += expected.target_own
        if aligned.found.missing.records or aligned.found.altered_records:
            _log.error(
                "audit_found_loss",
                flow=self.flow.name,
                topic=topic,
                partition=partition,
                losses=self.totals.losses[-3:],
            )
        deferred = aligned.next_source_offset < end
        watched.deferred_at = aligned.next_source_offset if deferred else None
        watched.source_next = aligned.next_source_offset
        watched.target_next = aligned.next_target_offset if aligned.next_target_offset is not None else start
        watched.recent = deque(list(aligned.recent)[-RECENT_CARRIED:])
        self.positions[key] = aligned.next_source_offset
        if failed is not None and not deferred:
            self._skip_failed(key, watched, failed)
        return self._spent(read_before)

    def _skip_failed(self, key: tuple[str, int], watched: _Watched, failed: ChainStopped) -> None:
        """Pass the record a transform failed on (everything before it verified): named, counted, and the target
        position found again through the offset syncs."""
        self.totals.failed(key[0], key[1], str(failed))
        _log.error("audit_transform_failed", flow=self.flow.name, topic=key[0], partition=key[1], error=str(failed))
        self._skip_to(key, watched, failed.offset + 1)

    def _spent(self, read_before: tuple[int, int]) -> int:
        """Bytes read since `read_before` (bytes, source records), counted; the bytes-per-record guess updated."""
        spent = self._source.counter.bytes + self._target.counter.bytes - read_before[0]
        records = self._source.counter.records - read_before[1]
        if records:
            self._bytes_per_record = max(1, spent // records)
        self.totals.bytes_read += spent
        return spent
