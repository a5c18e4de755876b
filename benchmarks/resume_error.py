"""How far a translated offset is from the exact resume point: records a failed-over group re-reads or skips."""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import accumulate

from benchmarks.positions import Position


@dataclass
class RemotePartition:
    """A remote partition as read back: each record's target offset and the source offset it was copied from."""

    target_offsets: list[int]  # ascending
    source_offsets: list[int]  # same order; not monotonic if a record was copied twice
    end: int  # the partition's end offset on the target
    running_max: list[int] = field(init=False, repr=False)  # running maximum of source_offsets: bisect-able

    def __post_init__(self) -> None:
        self.running_max = list(accumulate(self.source_offsets, max))

    def exact_resume(self, source_offset: int) -> int:
        """Target offset of the first mirrored record (in target order) whose source offset is >= `source_offset`,
        or the end offset if none is: where the group resumes with nothing missed and nothing repeated."""
        index = bisect.bisect_left(self.running_max, source_offset)
        return self.target_offsets[index] if index < len(self.target_offsets) else self.end

    def records_between(self, low: int, high: int) -> int:
        """Records with target offset in [low, high)."""
        return bisect.bisect_left(self.target_offsets, high) - bisect.bisect_left(self.target_offsets, low)

    def skipped(self, source_offset: int, resume_at: int) -> int:
        """Source records at or after `source_offset` that have no copy at or after target offset `resume_at`."""
        split = bisect.bisect_left(self.target_offsets, resume_at)
        before = {s for s in self.source_offsets[:split] if s >= source_offset}
        return len(before - set(self.source_offsets[split:]))


@dataclass(frozen=True)
class ResumeError:
    """One group-partition after failover: where it resumes, where it should, what it re-reads or skips."""

    position: Position
    translated: int | None  # None: no checkpoint for the partition (the group falls back to auto.offset.reset)
    exact: int
    duplicates: int
    losses: int


def resume_error(position: Position, translated: int | None, remote: RemotePartition) -> ResumeError:
    """Compare a translated target offset with the exact resume point of `position`."""
    exact = remote.exact_resume(position.offset)
    if translated is None:
        return ResumeError(position, None, exact, 0, 0)
    duplicates = remote.records_between(translated, exact) if translated < exact else 0
    losses = remote.skipped(position.offset, translated) if translated > exact else 0
    return ResumeError(position, translated, exact, duplicates, losses)


@dataclass
class Tally:
    """Totals over every group-partition of one tool's translation."""

    groups: set[str] = field(default_factory=set)
    partitions: int = 0
    untranslated: int = 0
    exact: int = 0
    duplicates: int = 0
    losses: int = 0
    max_error: int = 0
    duplicates_by_kind: Counter[str] = field(default_factory=Counter)
    losses_by_kind: Counter[str] = field(default_factory=Counter)
    inexact_by_kind: Counter[str] = field(default_factory=Counter)
    untranslated_by_kind: Counter[str] = field(default_factory=Counter)

    def add(self, error: ResumeError) -> None:
        """Count one group-partition."""
        self.groups.add(error.position.group)
        self.partitions += 1
        kind = error.position.kind
        if error.translated is None:
            self.untranslated += 1
            self.untranslated_by_kind[kind] += 1
            return
        self.duplicates += error.duplicates
        self.losses += error.losses
        self.max_error = max(self.max_error, error.duplicates, error.losses)
        self.duplicates_by_kind[kind] += error.duplicates
        self.losses_by_kind[kind] += error.losses
        if error.duplicates or error.losses:
            self.inexact_by_kind[kind] += 1
        else:
            self.exact += 1

    @classmethod
    def of(cls, errors: Iterable[ResumeError]) -> Tally:
        """The tally of `errors`."""
        tally = cls()
        for error in errors:
            tally.add(error)
        return tally
