"""Section 12: a flow with a transform. MM2 users change records on their way with Connect's single message
transforms; the same transform runs in both tools, one at a time, beside the same copy without one, in one run:

- Filter under a HasHeaderKey predicate: each record is inspected and, as no record carries the header, every
  record is copied (so the copies can be verified one by one);
- InsertHeader: every record gains a header (MM2 needs Connect's SimpleHeaderConverter for it: with its default
  ByteArrayConverter its task fails on the first record, docs/migrating-from-mm2.md);
- DropHeaders: every record of a data set whose records each carry the header loses it.

Copies that the transform leaves equal to the source are verified by `strait verify`'s engine; the others are
checked record by record against the source through the chain (`transform_copies`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from benchmarks.console import say
from benchmarks.contenders import MM2, STRAIT, TOOLS
from benchmarks.copy_run import CopyResult, copy_topic
from benchmarks.datasets import PARTITIONS, Dataset, fill_topic, one_kib
from benchmarks.lab import Lab, make_topics
from benchmarks.model import BenchOptions, Section
from benchmarks.tables import median, num
from benchmarks.transform_copies import check_through_chain, fill_with_header

TOPIC = "bench-smt-1k"  # 1 KiB records, as section 1's first data set
HEADED_TOPIC = "bench-smt-1k-headed"  # the same, each record with a `trace` header (for DropHeaders)
TRACE = "trace"
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
INSERT_HEADER = (
    ("transforms", "tag"),
    ("transforms.tag.type", CONNECT + "InsertHeader"),
    ("transforms.tag.header", "origin"),
    ("transforms.tag.value.literal", "eu-west"),
    # MM2's default header converter fails on InsertHeader's STRING header; Strait ignores the key
    ("header.converter", "org.apache.kafka.connect.storage.SimpleHeaderConverter"),
)
DROP_HEADERS = (
    ("transforms", "strip"),
    ("transforms.strip.type", CONNECT + "DropHeaders"),
    ("transforms.strip.headers", TRACE),
)


@dataclass(frozen=True)
class Chain:
    """One transform as both tools are configured with it, the data set it runs on, and how its copy is checked."""

    settings: tuple[tuple[str, str], ...]
    headed: bool = False  # on the data set whose records carry a `trace` header
    same_as_source: bool = True  # the copy equals the source: `strait verify`; else checked through the chain


CHAINS: dict[str, Chain] = {
    "none": Chain(()),
    "Filter": Chain(FILTER),
    "InsertHeader": Chain(INSERT_HEADER, same_as_source=False),
    "DropHeaders": Chain(DROP_HEADERS, headed=True, same_as_source=False),
}


@dataclass(frozen=True)
class SmtRun:
    """One tool's copy with or without a transform (`chain`: a key of CHAINS); `exact`: its copy checked whole."""

    copy: CopyResult
    tool: str
    chain: str
    exact: bool

    @property
    def rate(self) -> float:
        return self.copy.dataset.records / self.copy.copy_s

    def as_dict(self) -> dict[str, Any]:
        return {"chain": self.chain, "tool": self.tool, "exact": self.exact, "copy": self.copy.as_dict()}


def run(options: BenchOptions, lab: Lab) -> Section:
    """Per repeat, for each transform (and none), Strait and MM2 (alternating which goes first) copy the filled
    topic; each copy is checked whole."""
    plain = one_kib(TOPIC, options.quick)
    headed = replace(plain, topic=HEADED_TOPIC)
    make_topics(lab.source_admin(), [plain.topic, headed.topic], PARTITIONS)
    say(f"transforms: filling {plain.topic} and {headed.topic} with {plain.records:,} x {plain.label} each")
    fill_topic(lab.source, plain, lab.run_dir("smt-fill") / "fill.log")
    fill_with_header(lab.source, headed, TRACE)
    runs: list[SmtRun] = []
    for repeat in range(options.repeats):
        for name, chain in CHAINS.items():
            data = headed if chain.headed else plain
            for tool in TOOLS if repeat % 2 == 0 else TOOLS[::-1]:
                say(f"transforms: {tool}, transform {name}")
                runs.append(_copy(lab, tool, name, chain, data))
    return section(options, runs)


def _copy(lab: Lab, tool: str, name: str, chain: Chain, data: Dataset) -> SmtRun:
    checks: list[bool] = []

    def through_chain(remote: str) -> None:
        checked = check_through_chain(lab.source, lab.target, data.topic, remote, chain.settings)
        say(f"{tool}: {checked.compared:,} records compared through the chain, {checked.differing:,} differ")
        checks.append(checked.exact and checked.compared == data.records)

    copied = copy_topic(
        lab,
        tool,
        data,
        timeout_s=600 + data.records / 200,
        verify=chain.same_as_source,
        flow_settings=chain.settings,
        inspect=None if chain.same_as_source else through_chain,
    )
    if chain.same_as_source:
        checks.append(lab.verifications[-1].clean)
    return SmtRun(copied, tool, name, all(checks))


def section(options: BenchOptions, runs: list[SmtRun]) -> Section:
    """Medians per transform and tool, and the ratio to MM2 with the same transform."""
    rows: list[list[str]] = []
    notes: list[str] = []
    for chain in CHAINS:
        rates = {tool: median([r.rate for r in runs if r.chain == chain and r.tool == tool] or [0.0]) for tool in TOOLS}
        for tool in TOOLS:
            mine = [r for r in runs if r.chain == chain and r.tool == tool]
            if mine:
                rows.append(
                    [
                        chain,
                        tool,
                        num(rates[tool]),
                        num(median([r.copy.first_s for r in mine]), 1),
                        f"{sum(r.exact for r in mine)} of {len(mine)}",
                    ]
                )
        if rates[STRAIT] and rates[MM2]:
            notes.append(
                f"transform {chain}: Strait {rates[STRAIT]:,.0f} vs MM2 {rates[MM2]:,.0f} records/s "
                f"({rates[STRAIT] / rates[MM2]:.2f}x)."
            )
    if not all(r.exact for r in runs):
        notes.append("A copy was not whole or not as the transform makes it: see `exact` in the raw samples.")
    records = one_kib(TOPIC, options.quick).records
    return Section(
        key=KEY,
        title="12. A flow with a transform (Filter, InsertHeader, DropHeaders)",
        method=(
            "Both tools copy the same filled 12-partition topic of 1 KiB records, first with no transform, then with "
            "one of Connect's transforms set on the flow for both: `Filter` under a HasHeaderKey predicate "
            "(`transforms.dropMarked.type=org.apache.kafka.connect.transforms.Filter`, predicate `marked` = "
            "HasHeaderKey `drop-me`; no record carries the header, so each record is tested and all are copied), "
            "`InsertHeader` (`origin: eu-west` on every record; MM2 runs it with "
            "`header.converter=org.apache.kafka.connect.storage.SimpleHeaderConverter`, without which its task "
            "fails on the first record) and `DropHeaders` (`trace`, on a second topic of the same size whose records "
            "each carry a `trace` header, written by a Python producer in runs of 256 records per partition). "
            "Strait copies batch by batch: it decodes each fetched batch once, runs the transform over its records, "
            "forwards the batch as it is when no record changed and re-encodes it otherwise; MM2 runs the predicate "
            "and the transform in its task for each record. Every copy is then checked whole: a copy "
            "equal to its source by `strait verify`'s engine, the others record by record against the source "
            "through the same transform (*copies exact*). *Copy* is first → last record on the target; cells are "
            f"medians of {options.repeats} run(s) per tool and transform, the tools alternating which goes first."
        ),
        headers=["transform", "tool", "copy: first → last (records/s)", "first record after (s)", "copies exact"],
        rows=rows,
        settings={"data": f"{records:,} x 1 KiB over {PARTITIONS} partitions (each topic)"},
        raw={"runs": [r.as_dict() for r in runs]},
        notes=notes,
    )
