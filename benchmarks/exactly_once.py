"""Section 13: exactly-once. Strait with `exactly.once` (its batch path: forwarded batches inside the task's
transaction) against MirrorMaker 2 with its own exactly-once support (KIP-618, dedicated mode), on the same
brokers and the same properties file, at 12 and at 1,000 partitions; Strait at-least-once beside them at 12.

The copy counts from the first record written on the target (committed or not) until a read_committed consumer of
the remote topic has received every record (an exactly-once copy's end offsets also count transaction markers and
open transactions), so each tool's commit interval is part of its time, as it is for an application reading the
target.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from benchmarks.console import say
from benchmarks.contenders import MM2, STRAIT
from benchmarks.copy_run import CopyResult, copy_topic
from benchmarks.datasets import Dataset, fill_topic
from benchmarks.lab import Lab, make_ready_topics
from benchmarks.model import BenchOptions, Section
from benchmarks.scale import attempt_measure
from benchmarks.tables import median, num

KEY = "exactly_once"
TITLE = "13. Exactly-once"
EOS = "exactly-once"
ALOS = "at-least-once"


@dataclass(frozen=True)
class Case:
    """A data set and the modes each tool copies it in."""

    data: Dataset
    runs: tuple[tuple[str, str], ...]  # (tool, mode)


def cases(quick: bool) -> list[Case]:
    """1 GB at 12 partitions: a copy of several seconds, so the 100 ms polls and the last commit are a small part of
    it (200,000 records took under a second, and one poll more or less moved the ratio by a tenth); 200,000 records
    at 1,000 partitions."""
    twelve = Dataset("1 KiB", "bench-eos-12p", 1024, 20_000 if quick else 1_000_000)
    thousand = Dataset("1 KiB", "bench-eos-1000p", 1024, 20_000 if quick else 200_000, partitions=1000)
    return [
        Case(twelve, ((STRAIT, EOS), (MM2, EOS), (STRAIT, ALOS))),
        Case(thousand, ((STRAIT, EOS), (MM2, EOS))),
    ]


@dataclass(frozen=True)
class EosRun:
    copy: CopyResult
    tool: str
    mode: str
    partitions: int

    @property
    def rate(self) -> float:
        return self.copy.dataset.records / self.copy.copy_s

    def as_dict(self) -> dict[str, Any]:
        return {"tool": self.tool, "mode": self.mode, "partitions": self.partitions, "copy": self.copy.as_dict()}


def run(options: BenchOptions, lab: Lab) -> Section:
    """Per case and repeat, each (tool, mode) copies the filled topic (the order rotating per repeat); each copy is
    verified record by record (no duplicate may be there in exactly-once) before its remote topic is deleted."""
    found: list[EosRun] = []
    failures: list[str] = []
    for case in cases(options.quick):
        data = case.data
        make_ready_topics(lab.source, [data.topic], data.partitions)
        say(f"exactly-once: filling {data.topic} with {data.records:,} x {data.label} over {data.partitions}")
        fill_topic(lab.source, data, lab.run_dir("eos-fill") / f"{data.topic}.log")
        for repeat in range(options.repeats):
            order = case.runs[repeat % len(case.runs) :] + case.runs[: repeat % len(case.runs)]
            for tool, mode in order:
                what = f"{tool} {mode}, {data.partitions} partitions"
                say(f"exactly-once: {what}")
                copy = functools.partial(
                    copy_topic,
                    lab,
                    tool,
                    data,
                    timeout_s=600 + data.records / 100,
                    verify=True,
                    exactly_once=mode == EOS,
                    read_committed=True,
                    remote_made_first=True,
                )
                copied = attempt_measure(failures, what, repeat, copy)
                if copied is not None:
                    found.append(EosRun(copied, tool, mode, data.partitions))
    return section(options, found, failures)


def section(options: BenchOptions, runs: list[EosRun], failures: list[str]) -> Section:
    """Medians per (partitions, tool, mode), and the ratios the goals name; copies that failed are named."""
    rows: list[list[str]] = []
    notes: list[str] = list(failures)
    rates: dict[tuple[int, str, str], float] = {}
    for partitions in sorted({r.partitions for r in runs}):
        for tool, mode in sorted({(r.tool, r.mode) for r in runs if r.partitions == partitions}):
            mine = [r for r in runs if (r.partitions, r.tool, r.mode) == (partitions, tool, mode)]
            rate = rates[partitions, tool, mode] = median([r.rate for r in mine])
            rows.append(
                [
                    f"{partitions:,}",
                    tool,
                    mode,
                    num(rate),
                    num(median([r.copy.first_s for r in mine]), 1),
                    num(median([r.copy.usage.total_cpu_s for r in mine]), 1),
                    str(len(mine)),
                ]
            )
        strait, mm2 = rates.get((partitions, STRAIT, EOS)), rates.get((partitions, MM2, EOS))
        if strait and mm2:
            notes.append(
                f"{partitions:,} partitions: Strait exactly-once {strait:,.0f} vs MM2 exactly-once {mm2:,.0f} "
                f"records/s ({strait / mm2:.2f}x)."
            )
        plain = rates.get((partitions, STRAIT, ALOS))
        if strait and plain:
            notes.append(
                f"{partitions:,} partitions: Strait exactly-once runs at {strait / plain:.0%} of its at-least-once "
                f"rate ({plain:,.0f} records/s), both counted by a read_committed reader of the target."
            )
    return Section(
        key=KEY,
        title=TITLE,
        method=(
            "Both tools read one properties file per run; for exactly-once it holds "
            "`<target>.exactly.once.source.support=enabled`, `dedicated.mode.enable.internal.rest=true` and a "
            "`listeners` address for MM2's internal REST server, as MM2's README asks (MM2 then runs its source "
            "connector with Connect's exactly-once source support: one producer transaction per batch of records a "
            "task polls, Connect's default `transaction.boundary=poll`; Strait forwards the source's batches inside "
            "its task's transaction with the progress record, one transaction per commit interval, or sooner once the "
            "task copied all its sources held). A data set of 1 KiB records is filled once per partition count; every "
            "copy runs on a fresh flow whose remote topic is made (every log of it answering) before the tool starts, "
            "as in section 9, and counts as done when a read_committed consumer of the remote topic has received every"
            " record; each copy is then verified record by record (`strait verify`'s engine: duplicates are reported)."
            " Cells are medians over the repeats; *copy* is from the first record written on the target (committed or "
            "not) to the last a read_committed reader received, so each tool's last commit is in it and holding a "
            "first transaction open gains nothing; the reader fetches again 10 ms after its queue filled (librdkafka "
            "waits 1 s by default: a 100 MB commit then took the reader a second to receive)."
        ),
        headers=[
            "partitions",
            "tool",
            "delivery",
            "copy: first written → last received (records/s)",
            "first record written after (s)",
            "CPU (s)",
            "runs",
        ],
        rows=rows,
        settings={
            "data": "; ".join(f"{c.data.records:,} x 1 KiB over {c.data.partitions:,}" for c in cases(options.quick))
        },
        raw={"runs": [r.as_dict() for r in runs]},
        notes=notes,
    )
