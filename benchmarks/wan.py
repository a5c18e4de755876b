"""Section 11: a distant source. Users mirror between regions: the copy rate and the latency of sections 1 and 2,
measured again with the source cluster 50 and 150 ms of round trip away from the tools.

The lab's source broker also listens behind a fault proxy (Toxiproxy); for this section each tool reaches the
source only through it, with half the round trip added each way, while the target stays near (where both tools'
guides put a replicator: consume far, produce near). The load generator and the measuring consumer talk to both
clusters directly, so only the replicator's own traffic crosses the distance.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from benchmarks.console import say
from benchmarks.contenders import MM2, STRAIT, TOOLS
from benchmarks.copy_check import copy_notes
from benchmarks.copy_run import CopyResult, copy_topic
from benchmarks.datasets import PARTITIONS, fill_topic, one_kib
from benchmarks.lab import Lab, make_topics
from benchmarks.latency import LatencyRun, measure
from benchmarks.latency import durations as latency_durations
from benchmarks.model import BenchOptions, Section
from benchmarks.tables import median, num

TOPIC = "bench-wan-1k"  # 1 KiB records, as section 1's first data set
KEY = "wan"
MIB = 1024 * 1024


def round_trips(quick: bool) -> tuple[int, ...]:
    """Added round trips in ms: 50 and 150 (quick: 150 only)."""
    return (150,) if quick else (50, 150)


def recommended(tool: str, round_trip_ms: int) -> tuple[tuple[str, str], ...]:
    """What docs/operations.md ("Running a mirror across regions") tells each tool's users to set for a source
    `round_trip_ms` away: Strait nothing (it sizes its fetches and its byte bound from the round trip it
    measures); MM2 1 MiB of `max.partition.fetch.bytes` per 50 ms of round trip (at most 4 MiB) and
    `receive.buffer.bytes=-1` (the OS sizes the socket instead of Java's 64 KiB)."""
    if tool != MM2:
        return ()
    fetch_bytes = MIB * min(4, 1 + round_trip_ms // 50)
    return (("max.partition.fetch.bytes", str(fetch_bytes)), ("receive.buffer.bytes", "-1"))


@dataclass(frozen=True)
class WanRun:
    """One tool at one round trip: its copy, and its latency under the steady load."""

    round_trip_ms: int
    tool: str
    copy: CopyResult
    latency: LatencyRun

    def as_dict(self) -> dict[str, Any]:
        """Plain data for the raw samples."""
        stats = self.latency.stats()
        return {
            "round_trip_ms": self.round_trip_ms,
            "tool": self.tool,
            "copy": self.copy.as_dict(),
            "latency_ms": {key: round(value, 1) for key, value in stats.items()},
            "late": self.latency.late,
            "latency_verified_copy": None if self.latency.check is None else self.latency.check.as_dict(),
        }


def run(options: BenchOptions, lab: Lab) -> Section:
    """Per round trip and repeat: Strait, then MM2, a copy of the same filled topic and the steady load."""
    data = one_kib(TOPIC, options.quick)
    make_topics(lab.source_admin(), [data.topic], PARTITIONS)
    say(f"wan: filling {data.topic} with {data.records:,} x {data.label}")
    fill_topic(lab.source, data, lab.run_dir("wan-fill") / "fill.log")
    warmup_s, window_s = latency_durations(options.quick)
    far = lab.source.via_proxy()
    runs: list[WanRun] = []
    for round_trip in round_trips(options.quick):
        lab.source.network.latency(round_trip)
        say(f"wan: the source is {round_trip} ms of round trip away from the tools")
        try:
            for repeat in range(options.repeats):
                for tool in TOOLS if repeat % 2 == 0 else TOOLS[::-1]:  # neither tool always meets a fresh lab
                    tuned = recommended(tool, round_trip)
                    timeout_s = 600 + data.records / 200
                    copied = copy_topic(
                        lab, tool, data, timeout_s=timeout_s, verify=True, source=far, source_consumer=tuned
                    )
                    steady = measure(lab, tool, warmup_s, window_s, source=far, source_consumer=tuned)
                    runs.append(WanRun(round_trip, tool, copied, steady))
        finally:
            lab.source.network.heal()
    return section(options, runs)


def section(options: BenchOptions, runs: list[WanRun]) -> Section:
    """The table (medians per round trip and tool, a ratio row) and a verdict per round trip."""
    rows: list[list[str]] = []
    notes: list[str] = []
    for round_trip in round_trips(options.quick):
        mine = {tool: [r for r in runs if r.round_trip_ms == round_trip and r.tool == tool] for tool in TOOLS}
        for tool in TOOLS:
            if mine[tool]:
                rows.append([f"{round_trip}", tool, *_cells(mine[tool])])
        if mine[STRAIT] and mine[MM2]:
            notes.append(_verdict(round_trip, mine[STRAIT], mine[MM2]))
        notes += copy_notes(
            (
                (f"{round_trip} ms round trip, {tool} latency run {index}", result.latency.check)
                for tool in TOOLS
                for index, result in enumerate(mine[tool], 1)
            ),
            f"latency run's copy at {round_trip} ms",
        )
    return Section(
        key=KEY,
        title="11. A distant source (50 and 150 ms round trip)",
        method=(
            "The lab's source broker also listens behind a fault proxy (Toxiproxy, built from Go modules); each tool "
            "is given the proxy's address for the source, and the proxy adds half the round trip to every chunk in "
            "each direction, so every request the tool makes to the source (metadata, fetch, offsets) waits the "
            "round trip. The target stays near, as both tools' guides advise (consume far, produce near). *Copy* "
            "is section 1's measure on a filled 12-partition topic of 1 KiB records (start → first record, first → "
            "last record; every copy then verified record by record); *latency* is section 2's at a steady "
            "10,000 records/s (its copy verified too: a note names any run that lost records), the producer and "
            "the measuring consumer reaching both clusters directly. The proxy "
            "delays data without shrinking TCP windows (it buffers), so this measures the cost of round trips, not "
            "of a bandwidth-delay product. Both tools run with the properties of section 1 plus what "
            "docs/operations.md recommends for a distant source: Strait nothing (it measures the round trip and "
            "fetches in up to four sessions, per partition what it copies in a round trip at 100 MiB/s, holding up "
            "to 32 MiB per session), MM2 "
            "`max.partition.fetch.bytes` of 1 MiB per 50 ms of round trip (2 MiB at 50 ms, 4 MiB at 150 ms) and "
            "`receive.buffer.bytes=-1`. Cells are "
            f"medians of {options.repeats} run(s) per tool and round trip, Strait and MM2 alternating."
        ),
        headers=[
            "round trip (ms)",
            "tool",
            "copy: first → last (records/s)",
            "copy (MiB/s)",
            "first record after (s)",
            "10k/s: p50 / p99 (ms)",
        ],
        rows=rows,
        settings={"data": f"{one_kib(TOPIC, options.quick).records:,} x 1 KiB over {PARTITIONS} partitions"},
        raw={"runs": [r.as_dict() for r in runs]},
        notes=notes,
    )


def _rate(run: WanRun) -> float:
    return run.copy.dataset.records / run.copy.copy_s


def _cells(runs: list[WanRun]) -> list[str]:
    stats = [r.latency.stats() for r in runs]
    rate = median([_rate(r) for r in runs])
    return [
        num(rate),
        num(rate * runs[0].copy.dataset.record_size / MIB, 1),
        num(median([r.copy.first_s for r in runs]), 1),
        f"{num(median([s['p50'] for s in stats]))} / {num(median([s['p99'] for s in stats]))}",
    ]


def _verdict(round_trip: int, strait: list[WanRun], mm2: list[WanRun]) -> str:
    """The WAN goals at one round trip: copy rate >= 2x MM2's; latency p99 <= MM2's p99 + the round trip."""
    rate_s, rate_m = median([_rate(r) for r in strait]), median([_rate(r) for r in mm2])
    p99_s = median([r.latency.stats()["p99"] for r in strait])
    p99_m = median([r.latency.stats()["p99"] for r in mm2])
    copy = "met" if rate_s >= 2 * rate_m else "NOT met"
    tail = "met" if p99_s <= p99_m + round_trip else "NOT met"
    return (
        f"{round_trip} ms round trip: copy rate ≥ 2x MM2's: {copy} ({rate_s:,.0f} vs {rate_m:,.0f} records/s, "
        f"{rate_s / rate_m:.2f}x); latency p99 ≤ MM2's + {round_trip} ms: {tail} ({p99_s:,.0f} vs {p99_m:,.0f} ms)."
    )
