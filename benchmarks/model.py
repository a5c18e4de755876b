"""What every benchmark section takes and gives back, so the runner can report sections it knows nothing about."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class BenchOptions:
    """Run-wide choices: where files go, how big and how often (quick = a short smoke run, not for numbers)."""

    workdir: Path
    quick: bool = False
    repeats: int = 3
    tasks: int = 2  # Strait Spark tasks = MM2 tasks.max = cores of this machine by default


@dataclass
class Section:
    """One measured part of BENCHMARKS.md: how it was measured, the table, the raw numbers."""

    key: str
    title: str
    method: str  # a paragraph: what was run and how it was measured
    headers: list[str]
    rows: list[list[str]]
    settings: dict[str, str] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict)  # every measured sample, for anyone re-checking the table
    notes: list[str] = field(default_factory=list)  # e.g. where Strait is behind and why


def summary(samples: Sequence[float]) -> tuple[float, float]:
    """(min, median) of repeated measurements: min is the least disturbed run, median the typical one."""
    if not samples:
        raise ValueError("no samples")
    return min(samples), statistics.median(samples)


def percentile(samples: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile (fraction in 0..1) of unsorted samples."""
    if not samples:
        raise ValueError("no samples")
    ordered = sorted(samples)
    rank = max(0, min(len(ordered) - 1, math.ceil(fraction * len(ordered)) - 1))
    return ordered[rank]
