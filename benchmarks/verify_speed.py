"""Section: how fast `strait verify` checks a finished copy, from verifications run after the throughput copies.

Each throughput run leaves a complete copy on the target before its remote topic is deleted; `verify_copy` runs
the verifier's engine on it there (in this process, so its CPU time is the verifier's own, librdkafka's threads
included), for Strait's copies and MM2's alike: the same check works on both tools' flows.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.model import BenchOptions, Section
from benchmarks.tables import median
from shared.config import load_mm2_config
from shared.verify.flow_check import VerifyScope, verify_flow

KEY = "verify"
MIB = 1024 * 1024
GOAL_MIB_PER_CPU_S = 100


@dataclass(frozen=True)
class Verification:
    """One verification of one finished copy."""

    tool: str
    records_label: str
    records: int  # source records the copy holds
    totals: dict[str, Any]

    @property
    def mib_per_cpu_s(self) -> float:
        """MiB of keys, values and headers read (both clusters) per CPU second."""
        return float(self.totals["bytes_read"]) / MIB / max(1e-6, float(self.totals["cpu_s"]))

    @property
    def records_per_cpu_s(self) -> float:
        """Records read (both clusters) per CPU second."""
        return float(self.totals["records_read"]) / max(1e-6, float(self.totals["cpu_s"]))

    @property
    def clean(self) -> bool:
        """Every record verified, nothing lost, altered or unexpected."""
        t = self.totals
        return bool(t["verified"] == self.records and t["lost"] == 0 and t["unexpected"] == 0)


def verify_copy(config: Path, flow: str, topic: str, tool: str, records_label: str, records: int) -> Verification:
    """Verify `topic` of `flow` (a finished copy) and keep the totals."""
    return Verification(tool, records_label, records, verify_totals(config, flow, topic))


def verify_totals(config: Path, flow: str, topics: str) -> dict[str, Any]:
    """`strait verify`'s engine on the source topics `topics` (a regex) of `flow` in `config`: its totals, and
    `elapsed_s` (the whole call, reading the config and the flow's syncs included)."""
    began = time.monotonic()
    result = verify_flow(load_mm2_config(config).flow_named(flow), VerifyScope(topics=topics))
    totals = result.totals.as_json()
    totals["elapsed_s"] = round(time.monotonic() - began, 3)
    return totals


def run(options: BenchOptions, verifications: Sequence[Verification]) -> Section:
    """One row per record size and tool: median rates over the runs, and whether every copy verified clean."""
    if not verifications:
        raise RuntimeError("no throughput copy finished to verify")
    rows: list[list[str]] = []
    for label in dict.fromkeys(v.records_label for v in verifications):
        for tool in dict.fromkeys(v.tool for v in verifications):
            runs = [v for v in verifications if v.records_label == label and v.tool == tool]
            if not runs:
                continue
            rows.append(
                [
                    label,
                    f"{tool}'s copy",
                    f"{runs[0].records:,}",
                    f"{median([float(v.totals['wall_s']) for v in runs]):.2f}",
                    f"{median([float(v.totals['cpu_s']) for v in runs]):.2f}",
                    f"{median([v.records_per_cpu_s for v in runs]):,.0f}",
                    f"{median([v.mib_per_cpu_s for v in runs]):,.1f}",
                    f"{sum(1 for v in runs if v.clean)} of {len(runs)}",
                ]
            )
    slowest = min(verifications, key=lambda v: v.mib_per_cpu_s)
    notes = [
        f"Goal: at least {GOAL_MIB_PER_CPU_S} MiB per CPU second. Slowest run here: "
        f"{slowest.records_label} ({slowest.tool}'s copy) at {slowest.mib_per_cpu_s:,.1f} MiB per CPU second "
        f"({slowest.records_per_cpu_s:,.0f} records/s): per-record work (one fetch decode, one hash, one "
        "comparison per record and side, in Python) bounds small records by their count, not their bytes.",
    ]
    if not all(v.clean for v in verifications):
        notes.append("A copy did not verify clean: see the raw totals (a finding here is a loss to investigate).")
    return Section(
        key=KEY,
        title="Verifying a copy (strait verify)",
        method=(
            "After each throughput copy above reached its last record and the tool stopped, the benchmark runs the "
            "engine of `strait verify` on the flow (in its own process, one partition after another): every source "
            "record and every target record is read (read_committed) and compared by key, value, headers, timestamp "
            "and order. *CPU s* is the process's CPU time during the verification (librdkafka's threads included); "
            "rates count what was read on both clusters, per CPU second. MM2 has no verifier; its copies are "
            f"verified by the same engine. Medians over {options.repeats} runs per tool and record size."
        ),
        headers=[
            "records",
            "verified",
            "source records",
            "wall s",
            "CPU s",
            "records read per CPU s",
            "MiB read per CPU s",
            "clean (0 missing, 0 altered, all verified)",
        ],
        rows=rows,
        raw={"runs": [{"tool": v.tool, "records": v.records_label, **v.totals} for v in verifications]},
        notes=notes,
    )
