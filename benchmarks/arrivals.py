"""Records reaching the target under a steady load, each counted once: what the latency runs measure, and when
their drain may stop.

Both tools copy at least once, so the target may hold a record twice (a task that restarted copies a stretch
again). Counting messages took the second copy of one record for the arrival of another: the drain stopped while
records were still on their way, and "late" left them out. Here a record is known by its identity
(`record_identity`): its first copy is its arrival (and, when it was sent in the measured window, its latency
sample); a later copy only counts as a duplicate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

Window = tuple[float, float]  # send time in wall-clock ms, [start, end)


def measurement_window(first_arrival_ms: float, warmup_s: float, window_s: float) -> Window:
    """The send times measured: after `warmup_s` from the load's first arrival, `window_s` long, on whole
    milliseconds as record timestamps are, so the samples and the source's count of the window
    (`offsets_for_times`, whole ms) draw the same lines. With a fractional edge, the records stamped in the
    millisecond of each edge fell on one side for the samples and on the other for the count: tens of records
    "late" at 10k/s with every record on the target."""
    start = math.ceil(first_arrival_ms + warmup_s * 1000)
    return float(start), float(start + math.ceil(window_s * 1000))


def record_identity(topic: str, partition: int, key: bytes | None, value: bytes | None) -> int:
    """What tells one load record from another, as the load generators write them: kafka-producer-perf-test fills
    each value with fresh random letters (no key), the spread load keys each record with its number (its values
    are all alike). Python's hash of both, in one process: two different records share one with odds of about
    n² / 2^65, so a copy is never taken for another record, and a record never for its own copy."""
    return hash((topic, partition, key, value))


@dataclass
class Arrivals:
    """Distinct records seen on the target; the latency (ms) of each one's first copy when sent in `window`."""

    window: Window | None = None  # None until known: a record seen before counts as arrived, never as a sample
    latencies_ms: list[float] = field(default_factory=list)
    stamps_ms: list[int] = field(default_factory=list)  # each sample's send time, in the same order
    duplicates: int = 0  # copies of a record already seen
    _seen: set[int] = field(default_factory=set, repr=False)

    def add(self, identity: int, stamp_ms: int, now_ms: float) -> None:
        """One message read at `now_ms`: a record's arrival, or a second copy of one already seen."""
        if identity in self._seen:
            self.duplicates += 1
            return
        self._seen.add(identity)
        window = self.window
        if window is not None and window[0] <= stamp_ms < window[1]:
            self.latencies_ms.append(now_ms - stamp_ms)
            self.stamps_ms.append(stamp_ms)

    @property
    def distinct(self) -> int:
        """Records that arrived, each once."""
        return len(self._seen)

    def complete(self, expected: int) -> bool:
        """Every one of `expected` distinct records arrived: the drain may stop."""
        return self.distinct >= expected

    def late(self, in_window: int) -> int:
        """Of the `in_window` records sent in the window, those not on the target (no copy arrived)."""
        return max(0, in_window - len(self.latencies_ms))
