"""When a mirrored record needs an offset sync: MM2's rules, plus one wherever the target offsets jump.

MM2 writes a sync for the first record of a task's life, when the downstream offset drifted `offset.lag.max`
past the last sync, when upstream offsets skip (compaction, transaction markers) and when the downstream
offset goes backwards. Strait also syncs where downstream offsets skip (its own transaction markers), the
record before every jump and the last record delivered before each commit, so every run of consecutive
offsets has a sync at both ends and every discontinuity (a restart, a marker, an aborted transaction, a
compacted gap) sits between two syncs whose offset deltas differ: that is what lets the translation index be
exact for every record, and a position between runs translate to the start of the next one.

Syncs wait in memory until the next commit. A filtered, transactional or compacted source (a skip every few
records) makes two syncs per skip, and a backlog copied between two interval commits can make thousands: the
task's `SyncBudget` asks for a commit as soon as its trackers hold `TASK_PENDING_SYNCS` syncs, or one of them a
quarter of its cap, so they are written rather than left out (a run without its end syncs no longer translates
exactly, and a group paused in it would re-read up to its start). `max_pending` per partition stays as the hard
bound on memory. Every sync carries the number of jumps the tracker had seen when it decided it (its segment), so
a reader never joins two syncs across a jump, even when the jump's own sync was left out or lost in delivery: a
sync left out or lost only costs precision.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

MAX_PENDING_SYNCS = 4_000  # per partition: the hard bound (about 600 KiB)
TASK_PENDING_SYNCS = 10_000  # per task: a commit is due (about 1.5 MiB)
EARLY_COMMIT_GAP_S = 0.1  # a commit the budget asks for comes at least this long after the last one


@dataclass
class SyncBudget:
    """The syncs waiting in one task's trackers: once `due`, the task commits now rather than at its interval."""

    limit: int = TASK_PENDING_SYNCS
    pending: int = 0
    urgent: bool = False  # one partition filled a quarter of its cap

    @property
    def due(self) -> bool:
        """True when the pending syncs should be written now (the caller keeps EARLY_COMMIT_GAP_S between the
        commits this asks for: with `offset.lag.max=0` every record is a sync, and under exactly-once each
        commit ends a transaction)."""
        return self.urgent or self.pending >= self.limit

    def all_taken(self) -> None:
        """Every tracker's syncs were taken (a commit wrote them): no partition is filling any more."""
        self.urgent = False


@dataclass(frozen=True, slots=True)
class PendingSync:
    """A sync to write at the next commit, with the number of jumps seen when it was decided."""

    upstream: int
    downstream: int
    jumps: int
    opens: bool = False  # the sync at a jump itself: the first record of its stretch


@dataclass
class SyncTracker:
    """Per-partition sync decisions over a task's life, fed with each acknowledged (upstream, downstream) pair."""

    offset_lag_max: int
    max_pending: int = MAX_PENDING_SYNCS
    budget: SyncBudget = field(default_factory=SyncBudget)  # shared by the task's trackers
    writer: int = field(default_factory=lambda: random.getrandbits(63))  # one sequence per task life
    last_sync_downstream: int = -1
    previous_upstream: int = -2
    previous_downstream: int = -2
    pending: list[PendingSync] = field(default_factory=list)
    left_out: int = 0
    jumps: int = 0
    _last_synced: bool = True

    def delivered(self, upstream: int, downstream: int) -> None:
        """Record an acknowledged record; queue a sync for it when a rule asks for one."""
        jumped = upstream != self.previous_upstream + 1 or downstream != self.previous_downstream + 1
        if jumped and self.previous_upstream >= 0 and self.last_sync_downstream != self.previous_downstream:
            self._queue(self.previous_upstream, self.previous_downstream)  # closes the run the jump ends
        self.previous_upstream, self.previous_downstream = upstream, downstream
        self.jumps += jumped
        if jumped or downstream - self.last_sync_downstream - 1 >= self.offset_lag_max:
            self._queue(upstream, downstream, opens=jumped)
        else:
            self._last_synced = False

    def _queue(self, upstream: int, downstream: int, *, opens: bool = False) -> None:
        self.last_sync_downstream = downstream
        self._last_synced = len(self.pending) < self.max_pending
        if self._last_synced:
            self._append(PendingSync(upstream, downstream, self.jumps, opens))
        else:
            self.left_out += 1

    def _append(self, sync: PendingSync) -> None:
        self.pending.append(sync)
        self.budget.pending += 1
        if len(self.pending) * 4 >= self.max_pending:
            self.budget.urgent = True

    def delivered_run(self, upstream: int, downstream: int, count: int) -> None:
        """Record `count` acknowledged records at consecutive offsets on both sides (one forwarded batch).

        The same syncs as `delivered` called for each record, in work per sync rather than per record."""
        self.delivered(upstream, downstream)
        if count <= 1:
            return
        last_downstream = downstream + count - 1
        step = self.offset_lag_max + 1
        at = self.last_sync_downstream + step  # the next record a sync falls on (after the first record)
        synced_last = False
        while at <= last_downstream:
            if len(self.pending) >= self.max_pending:  # full: every later sync of the run is left out
                skipped = (last_downstream - at) // step + 1
                self.left_out += skipped
                self.last_sync_downstream = at + (skipped - 1) * step
                synced_last = False
                break
            self._append(PendingSync(upstream + (at - downstream), at, self.jumps))
            self.last_sync_downstream = at
            synced_last = at == last_downstream
            at += step
        self.previous_upstream, self.previous_downstream = upstream + count - 1, last_downstream
        self._last_synced = synced_last

    def take(self) -> list[PendingSync]:
        """The syncs to write at a commit: the queued ones and the last delivered record if it has none yet."""
        syncs, self.pending = self.pending, []
        self.budget.pending -= len(syncs)
        if not self._last_synced and self.previous_upstream >= 0:
            syncs.append(PendingSync(self.previous_upstream, self.previous_downstream, self.jumps))
            self.last_sync_downstream = self.previous_downstream
            self._last_synced = True
        return syncs
