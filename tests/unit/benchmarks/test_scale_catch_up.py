"""A catch-up that does not finish within its deadline is a run that says so, not a section that is lost."""

from __future__ import annotations

import time

import pytest

from benchmarks import scale
from benchmarks.scale import Shape


class _Alive:
    tool = "MM2"

    def alive(self) -> bool:
        return True

    def log_tail(self) -> str:
        return ""


class _StuckEnds:
    """A target where every partition got records but the last one never arrives."""

    def __init__(self, shape: Shape) -> None:
        self.shape = shape

    def ends(self) -> dict[tuple[str, int], int]:
        ends = {(f"t{index}", 0): 1 for index in range(self.shape.partitions)}
        ends[("t0", 0)] = self.shape.backlog - self.shape.partitions  # one record short in all
        return ends


def test_a_tool_that_stalls_short_of_the_backlog_yields_what_it_copied_by_the_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(scale, "START_TIMEOUT_S", 0)
    monkeypatch.setattr(scale, "POLL_S", 0.01)
    shape = Shape(topics=4, per_topic=1, backlog=200)  # deadline: 200 / 2000 = 0.1 s after the start
    first_s, every_s, last_s, copied = scale._catch_up(_Alive(), _StuckEnds(shape), shape, time.monotonic())  # type: ignore[arg-type]
    assert copied == 199
    assert first_s <= every_s <= last_s
    assert last_s >= 0.1
