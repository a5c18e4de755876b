"""When a mirrored record needs an offset sync: MM2's rules, plus one sync at each epoch's first record.

MM2 writes a sync for the first record of its lifetime, when the downstream offset drifted
`offset.lag.max` past the last sync, when upstream offsets skip (compaction, transaction markers) and
when the downstream offset goes backwards. Strait also syncs the first and last record a task delivers
per partition in each epoch, so that every discontinuity (a retried task, a restart) sits between two
syncs whose offset deltas differ; that is what lets the translation index be exact within a run.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class SyncTracker:
    """Per-partition state of the sync decision within one task's epoch."""

    offset_lag_max: int
    last_sync_downstream: int = -1
    previous_upstream: int = -1
    previous_downstream: int = -1
    pending_last: tuple[int, int] | None = None

    def should_sync(self, upstream: int, downstream: int) -> bool:
        """Record a delivered record; True if a sync must be written for it."""
        first = self.last_sync_downstream == -1
        too_stale = downstream - (self.last_sync_downstream + 1) >= self.offset_lag_max
        skipped_upstream = upstream - self.previous_upstream != 1
        downstream_rewound = downstream < self.previous_downstream
        self.previous_upstream, self.previous_downstream = upstream, downstream
        if first or too_stale or skipped_upstream or downstream_rewound:
            self.last_sync_downstream = downstream
            self.pending_last = None
            return True
        self.pending_last = (upstream, downstream)
        return False

    def closing_sync(self) -> tuple[int, int] | None:
        """The epoch's last delivered record if it has no sync yet (written when the epoch ends)."""
        last, self.pending_last = self.pending_last, None
        if last is not None:
            self.last_sync_downstream = last[1]
        return last
