"""Bench latency counting: a second copy of a record is not the arrival of a missing one, so the drain waits for it
and "late" names it; each run's verified copy says in the table and the notes when records are missing."""

from __future__ import annotations

from pathlib import Path

from benchmarks import latency, scale
from benchmarks.arrivals import Arrivals, measurement_window, record_identity
from benchmarks.copy_check import CopyCheck
from benchmarks.latency import FLOOR, LatencyRun
from benchmarks.model import BenchOptions
from benchmarks.usage import Usage

WINDOW = (1_000.0, 2_000.0)
TOPIC = "src1.bench-lat-src1"


def _record(partition: int, value: bytes) -> int:
    """A kafka-producer-perf-test record as the measuring consumer reads it: no key, random letters as value."""
    return record_identity(TOPIC, partition, None, value)


def test_a_second_copy_does_not_stand_in_for_a_record_still_missing() -> None:
    arrivals = Arrivals(WINDOW)
    first, second, third = _record(0, b"AQXZ"), _record(1, b"KKRT"), _record(0, b"MBNE")
    for identity, stamp in ((first, 1_100), (first, 1_100), (second, 1_200)):  # `first` copied twice
        arrivals.add(identity, stamp, now_ms=stamp + 40.0)

    assert arrivals.distinct == 2
    assert arrivals.duplicates == 1
    assert not arrivals.complete(expected=3)  # three messages read, but only two of the three records
    assert arrivals.latencies_ms == [40.0, 40.0]  # one sample per record, none for the second copy
    assert arrivals.late(in_window=3) == 1

    arrivals.add(third, 1_300, now_ms=1_390.0)
    assert arrivals.complete(expected=3)
    assert arrivals.late(in_window=3) == 0
    assert arrivals.stamps_ms == [1_100, 1_200, 1_300]


def test_records_outside_the_window_arrive_without_being_measured() -> None:
    arrivals = Arrivals()  # the window is known only once the load's first record arrived
    arrivals.add(_record(0, b"probe"), 500, now_ms=900.0)
    arrivals.add(_record(1, b"probe"), 500, now_ms=900.0)  # one probe per partition: two records
    arrivals.window = WINDOW
    arrivals.add(_record(0, b"WARM"), 950, now_ms=960.0)
    arrivals.add(_record(0, b"LATE"), 2_000, now_ms=2_010.0)  # the window's end is not in it

    assert arrivals.distinct == 4
    assert arrivals.latencies_ms == []
    assert arrivals.late(in_window=0) == 0


def test_the_window_edges_are_whole_milliseconds_as_the_sources_count_of_the_window_is() -> None:
    # The source's count asks offsets_for_times at whole ms: a record stamped 4,234 is before a window that starts
    # at 4,234.7 for the samples, inside it for the count (and one stamped 12,234 the other way round).
    window = measurement_window(first_arrival_ms=1_234.7, warmup_s=3.0, window_s=8.0)
    assert window == (4_235.0, 12_235.0)
    arrivals = Arrivals(window)
    for stamp in (4_234, 4_235, 12_234, 12_235):
        arrivals.add(_record(0, str(stamp).encode()), stamp, now_ms=stamp + 5.0)
    assert arrivals.stamps_ms == [4_235, 12_234]  # what offsets_for_times(4,235) .. (12,235) counts


def test_a_record_is_told_apart_by_its_value_or_its_key_and_its_copy_is_not() -> None:
    assert _record(3, b"PERF" * 256) == _record(3, b"PERF" * 256)  # a copy: same place, same value
    assert _record(3, b"PERF" * 256) != _record(3, b"PERG" * 256)  # perf-test: each value is random letters
    assert _record(3, b"probe") != _record(4, b"probe")  # the probes: one per partition
    same_value = b"\x07" * 1024  # the spread load: every value alike, each record keyed with its number
    assert record_identity(TOPIC, 0, b"17", same_value) != record_identity(TOPIC, 0, b"18", same_value)


def _check(missing: int, duplicates: int = 0) -> CopyCheck:
    return CopyCheck(
        verified=1_000 - missing, missing=missing, altered=0, duplicates=duplicates, unexpected=0, elapsed_s=1.0
    )


def _latency_run(tool: str, check: CopyCheck | None, late: int = 0) -> LatencyRun:
    return LatencyRun(tool, [10.0, 20.0, 30.0], 8.0, late, Usage(tool, "10k records/s"), check=check)


def test_the_latency_table_gives_each_runs_verified_copy_and_a_loss_is_named() -> None:
    options = BenchOptions(Path("/unused"), quick=True, repeats=2)
    runs = [
        _latency_run("Strait", _check(0, duplicates=12)),
        _latency_run("MM2", _check(0)),
        _latency_run(FLOOR, None),
        _latency_run("Strait", _check(22), late=22),
        _latency_run("MM2", _check(0)),
        _latency_run(FLOOR, None),
    ]
    section = latency.section(options, runs)

    rows = {row[0]: row for row in section.rows}
    assert section.headers[-1] == "verified copy per run: missing / duplicates"
    assert rows["Strait"][-2:] == ["22", "0 / 12; 22 / 0"]
    assert rows["MM2"][-1] == "0 / 0; 0 / 0"
    assert rows[FLOOR][-1] == "-"
    losses = [note for note in section.notes if "MISSING" in note]
    assert losses == [
        "Strait run 2: RECORDS MISSING: the verifier found 22 source records not on the target "
        "(978 verified, 0 duplicates)."
    ]
    assert section.raw["runs"][3]["verified_copy"]["missing"] == 22


def test_the_scale_table_gives_each_runs_verified_copy_and_a_loss_is_named() -> None:
    shape = scale.shapes(quick=True)[1]
    steady = scale.Steady([10.0, 20.0], late=0, cpu_cores=0.5, rss_mib=500)

    def run(tool: str, check: CopyCheck) -> scale.ScaleRun:
        return scale.ScaleRun(tool, shape, 5.0, 6.0, 7.0, 800, steady, None, check=check)

    options = BenchOptions(Path("/unused"), quick=True, repeats=1)
    section = scale._section(options, [run("Strait", _check(3)), run("MM2", _check(0, duplicates=5))], [])

    rows = {row[1]: row for row in section.rows if row[0] == shape.label}
    assert section.headers[-1] == "verified copy per run: missing / duplicates"
    assert rows["Strait"][-1] == "3 / 0"
    assert rows["MM2"][-1] == "0 / 5"
    assert [note for note in section.notes if "MISSING" in note] == [
        "100 partitions, Strait run 1: RECORDS MISSING: the verifier found 3 source records not on the target "
        "(997 verified, 0 duplicates)."
    ]


def test_runs_whose_copies_are_whole_are_said_to_be_so_once() -> None:
    options = BenchOptions(Path("/unused"), quick=True, repeats=1)
    runs = [_latency_run("Strait", _check(0, duplicates=3)), _latency_run("MM2", _check(0)), _latency_run(FLOOR, None)]
    section = latency.section(options, runs)
    assert "Every run's copy verified record by record (2): no record missing or altered." in section.notes
    assert not [note for note in section.notes if "MISSING" in note]


def test_a_tail_mm2_never_copied_counts_as_missing() -> None:
    totals = {
        "verified": 990,
        "missing": 0,
        "not_yet_copied": 10,  # MM2 keeps no progress: the verifier cannot call its tail owed
        "altered": 1,
        "duplicates": 4,
        "unexpected": 0,
        "elapsed_s": 2.5,
    }
    check = CopyCheck.of(totals)
    assert (check.missing, check.lost) == (10, 11)
    assert check.cell() == "10 / 4 (1 altered)"
