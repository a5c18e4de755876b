"""Section 12: a flow with a transform. MM2 users filter records with Connect's single message transforms; the
same Filter (under a HasHeaderKey predicate, so each record is inspected and, as no record carries the header,
every record is copied and the copies can be verified one by one) runs in both tools, beside the same copy
without it, in one run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from benchmarks.console import say
from benchmarks.contenders import MM2, STRAIT, TOOLS
from benchmarks.copy_run import CopyResult, copy_topic
from benchmarks.datasets import PARTITIONS, fill_topic, one_kib
from benchmarks.lab import Lab, make_topics
from benchmarks.model import BenchOptions, Section
from benchmarks.tables import median, num

TOPIC = "bench-smt-1k"  # 1 KiB records, as section 1's first data set
KEY = "transforms"
CONNECT = "org.apache.kafka.connect.transforms."
FILTER = (
    ("transforms", "dropMarked"),
    ("transforms.dropMarked.type", CONNECT + "Filter"),
    ("transforms.dropMarked.predicate", "marked"),
    ("predicates", "marked"),
    ("predicates.marked.type", CONNECT + "predicates.HasHeaderKey"),
    ("predicates.marked.name", "drop-me"),
)
CHAINS: dict[str, tuple[tuple[str, str], ...]] = {"none": (), "Filter": FILTER}


@dataclass(frozen=True)
class SmtRun:
    """One tool's copy with or without the transform (`chain`: a key of CHAINS)."""

    copy: CopyResult
    tool: str
    chain: str

    @property
    def rate(self) -> float:
        return self.copy.dataset.records / self.copy.copy_s

    def as_dict(self) -> dict[str, Any]:
        return {"chain": self.chain, "tool": self.tool, "copy": self.copy.as_dict()}


def run(options: BenchOptions, lab: Lab) -> Section:
    """Per repeat, with and without the Filter, Strait and MM2 (alternating which goes first) copy the filled topic."""
    data = one_kib(TOPIC, options.quick)
    make_topics(lab.source_admin(), [data.topic], PARTITIONS)
    say(f"transforms: filling {data.topic} with {data.records:,} x {data.label}")
    fill_topic(lab.source, data, lab.run_dir("smt-fill") / "fill.log")
    runs: list[SmtRun] = []
    for repeat in range(options.repeats):
        for chain, settings in CHAINS.items():
            for tool in TOOLS if repeat % 2 == 0 else TOOLS[::-1]:
                say(f"transforms: {tool}, transform {chain}")
                copied = copy_topic(
                    lab, tool, data, timeout_s=600 + data.records / 200, verify=True, flow_settings=settings
                )
                runs.append(SmtRun(copied, tool, chain))
    return section(options, runs)


def section(options: BenchOptions, runs: list[SmtRun]) -> Section:
    """Medians per transform and tool, and the ratio to MM2 with the same transform."""
    rows: list[list[str]] = []
    notes: list[str] = []
    for chain in CHAINS:
        rates = {tool: median([r.rate for r in runs if r.chain == chain and r.tool == tool] or [0.0]) for tool in TOOLS}
        for tool in TOOLS:
            mine = [r for r in runs if r.chain == chain and r.tool == tool]
            if mine:
                rows.append([chain, tool, num(rates[tool]), num(median([r.copy.first_s for r in mine]), 1)])
        if rates[STRAIT] and rates[MM2]:
            notes.append(
                f"transform {chain}: Strait {rates[STRAIT]:,.0f} vs MM2 {rates[MM2]:,.0f} records/s "
                f"({rates[STRAIT] / rates[MM2]:.2f}x)."
            )
    return Section(
        key=KEY,
        title="12. A flow with a transform (Filter)",
        method=(
            "Both tools copy the same filled 12-partition topic of 1 KiB records, first with no transform, then "
            "with Connect's Filter under a HasHeaderKey predicate (`transforms=dropMarked`, "
            "`transforms.dropMarked.type=org.apache.kafka.connect.transforms.Filter`, predicate `marked` = "
            "HasHeaderKey `drop-me`), set on the flow for both. No record carries the header, so each record is "
            "tested and all are copied; every copy is then verified record by record. A flow with a transform "
            "copies record by record in Strait (no batch forwarding); MM2 runs the predicate and the transform in "
            "its task for each record. *Copy* is first → last record on the target; cells are medians of "
            f"{options.repeats} run(s) per tool and transform, the tools alternating which goes first."
        ),
        headers=["transform", "tool", "copy: first → last (records/s)", "first record after (s)"],
        rows=rows,
        settings={"data": f"{one_kib(TOPIC, options.quick).records:,} x 1 KiB over {PARTITIONS} partitions"},
        raw={"runs": [r.as_dict() for r in runs]},
        notes=notes,
    )
