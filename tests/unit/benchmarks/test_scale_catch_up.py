"""Bench report logic: a catch-up that does not finish is a run that says so; the floor and Kafka's own copy sit
beside the tools; the WAN verdicts compare what the goals say."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from benchmarks import scale, wan
from benchmarks.copy_run import CopyResult
from benchmarks.datasets import one_kib
from benchmarks.latency import FLOOR, LatencyRun
from benchmarks.model import BenchOptions
from benchmarks.replica_ceiling import ReplicaCopy
from benchmarks.scale import Shape
from benchmarks.usage import Usage


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


def _run(tool: str, shape: Shape, seconds: float) -> scale.ScaleRun:
    steady = scale.Steady([10.0, 20.0], late=0, cpu_cores=0.5, rss_mib=500)
    return scale.ScaleRun(tool, shape, 5.0, 6.0, 5.0 + seconds, 800, steady, None)


def test_the_floor_row_and_the_ceiling_note_put_both_tools_against_kafkas_own_copy() -> None:
    shape = scale.shapes(quick=True)[0]  # 12 partitions, 12,000 records
    runs = [_run("Strait", shape, 0.5), _run("MM2", shape, 1.0)]  # 24,000 and 12,000 records/s
    copy = ReplicaCopy("12", shape.backlog, shape.backlog * 1024, first_s=2.0, copied_s=2.4, in_sync_s=3.0)
    floor = scale.Floor(shape, scale.Steady([5.0], 0, 0.0, 0.0), None, copy)  # 30,000 records/s
    options = BenchOptions(Path("/unused"), quick=True, repeats=1)
    section = scale._section(options, runs, [floor])
    floor_row = next(row for row in section.rows if row[1] == FLOOR)
    assert floor_row[2:4] == ["30,000", "2.0"]
    note = next(text for text in section.notes if "Kafka's own copy" in text)
    assert "Strait's median is 80% of it" in note
    assert "MM2's median is 40% of it" in note
    assert "twice MM2's catch-up, 24,000 records/s, is below what Kafka's own copy reached" in note
    assert section.raw["replica_fetcher"][0]["records_per_s"] == 30_000


def test_the_wan_verdict_compares_the_copy_rate_and_the_tail_with_the_round_trip_allowed() -> None:
    data = one_kib(wan.TOPIC, quick=True)  # 20,000 records

    def one(tool: str, copy_s: float, p99: float) -> wan.WanRun:
        copy = CopyResult(tool, data, 5.0, 5.0 + copy_s, Usage(tool, "copy"))
        latencies = [10.0] * 98 + [p99, p99]
        return wan.WanRun(150, tool, copy, LatencyRun(tool, latencies, 10.0, 0, Usage(tool, "lat")))

    options = BenchOptions(Path("/unused"), quick=True, repeats=1)
    section = wan.section(options, [one("Strait", 1.0, 300), one("MM2", 2.5, 200)])
    assert section.rows[0][:3] == ["150", "Strait", "20,000"]
    (verdict,) = section.notes
    assert "copy rate ≥ 2x MM2's: met (20,000 vs 8,000 records/s, 2.50x)" in verdict
    assert "latency p99 ≤ MM2's + 150 ms: met (300 vs 200 ms)" in verdict


def test_a_measurement_that_fails_is_named_and_the_section_goes_on() -> None:
    failures: list[str] = []

    def broken() -> int:
        raise RuntimeError("load generator failed: 17916 records not acknowledged;\n errors: []")

    assert scale.attempt_measure(failures, "4,000 partitions, MM2", 2, broken) is None
    assert scale.attempt_measure(failures, "12 partitions, Strait", 2, lambda: 7) == 7
    assert failures == [
        "repeat 2, 4,000 partitions, MM2: not measured (RuntimeError: load generator failed: 17916 records not "
        "acknowledged; errors: [])"
    ]
    shape = scale.shapes(quick=True)[0]
    options = BenchOptions(Path("/unused"), quick=True, repeats=1)
    section = scale._section(options, [_run("Strait", shape, 0.5), _run("MM2", shape, 1.0)], [], failures)
    assert failures[0] in section.notes


def test_a_steady_load_that_stayed_under_the_rate_is_named_with_what_each_run_reached() -> None:
    shape = scale.shapes(quick=True)[1]
    _warmup_s, window_s = scale.durations(quick=True)
    full = int(scale.RATE * window_s)

    def run(tool: str, received: int, late: int) -> scale.ScaleRun:
        steady = scale.Steady([10.0] * received, late=late, cpu_cores=0.5, rss_mib=500)
        return scale.ScaleRun(tool, shape, 5.0, 6.0, 7.0, 800, steady, None)

    options = BenchOptions(Path("/unused"), quick=True, repeats=1)
    held = scale._section(options, [run("Strait", full - 10, 10), run("MM2", full, 0)], [])
    assert not [note for note in held.notes if "stayed under" in note]

    short = scale._section(options, [run("Strait", full // 2, 0), run("MM2", full, 0)], [])
    note = next(note for note in short.notes if "stayed under" in note)
    assert f"Strait {scale.RATE // 2:,}" in note
    assert f"MM2 {scale.RATE:,}" in note
