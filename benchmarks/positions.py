"""Where the benchmark's consumer groups stand on the source: a mix of positions that stress offset translation."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

# zero: nothing read yet; early: the old part of the log, where MM2's exponentially spaced sync store is
# coarsest; middle: anywhere; near-end: within offset.lag.max of the end (between MM2's last two syncs);
# end: everything read.
KINDS = ("zero", "early", "middle", "near-end", "end")


@dataclass(frozen=True)
class Position:
    """A group's committed offset on one source partition, and which kind of position it is."""

    group: str
    partition: int
    offset: int
    kind: str


def choose_positions(
    groups: Sequence[str], partitions: int, records: int, rng: random.Random, *, lag_max: int = 100
) -> list[Position]:
    """One position per group and partition; kinds rotate over partitions so every group holds a mix.

    `records` is the number of records in each source partition (offsets 0..records-1, end = records).
    """
    if records < 4 * lag_max:
        raise ValueError(f"need at least {4 * lag_max} records per partition, got {records}")
    early_end = max(2, records // 10)
    chosen = []
    for g, group in enumerate(groups):
        for partition in range(partitions):
            kind = KINDS[(g + partition) % len(KINDS)]
            if kind == "zero":
                offset = 0
            elif kind == "early":
                offset = rng.randint(1, early_end)
            elif kind == "middle":
                offset = rng.randint(early_end, records - lag_max)
            elif kind == "near-end":
                offset = records - rng.randint(1, lag_max - 1)
            else:
                offset = records
            chosen.append(Position(group, partition, offset, kind))
    return chosen
