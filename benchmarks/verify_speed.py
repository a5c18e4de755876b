"""Section: how fast `strait verify` checks a finished copy, from verifications run after the throughput copies.

Each throughput run (or section 1b's own, `verify_alone`) leaves a complete copy on the target before its remote
topic is deleted; `verify_copy` runs `strait verify --json` on it there, in a process of its own, so the CPU time
it reports is the verifier's alone (its client threads included, its start-up not), for Strait's copies and MM2's
alike: the same check works on both tools' flows. One extra verification may run under py-spy (`profile_verify`):
where the verifier's CPU goes, for the notes.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.model import BenchOptions, Section
from benchmarks.profiling import RATE_HZ, parse_collapsed, py_spy_binary
from benchmarks.tables import median

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


def verify_argv(config: Path, flow: str, topics: str) -> list[str]:
    """`strait verify --json` on the source topics `topics` (a regex) of `flow` in `config`."""
    strait = str(Path(sys.executable).with_name("strait"))
    return [strait, "verify", "--config", str(config), "--flows", flow, "--topics", topics, "--json"]


def verify_totals(config: Path, flow: str, topics: str) -> dict[str, Any]:
    """`strait verify` run on `topics` of `flow`: its totals (`cpu_s`: the process's CPU while it verified), and
    `elapsed_s` and `process_cpu_s` (the whole process, its start-up and the flow's syncs included)."""
    began, children = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
    run = subprocess.run(verify_argv(config, flow, topics), capture_output=True, text=True, timeout=1800)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if run.returncode not in (0, 3, 4):  # 3 and 4: it verified and found something (the table says so)
        raise RuntimeError(f"strait verify exited {run.returncode}: {run.stderr.strip()[-2000:]}")
    totals: dict[str, Any] = json.loads(run.stdout)["flows"][0]["totals"]
    totals["elapsed_s"] = round(time.monotonic() - began, 3)
    used = after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime
    totals["process_cpu_s"] = round(used, 3)
    return totals


def profile_verify(config: Path, flow: str, topics: str, out: Path) -> dict[str, Any]:
    """One more `strait verify` (not measured) under py-spy: the functions and lines where its CPU went."""
    binary = py_spy_binary()
    if binary is None:
        return {"note": "py-spy is not installed"}
    raw = out / "verify-profile.txt"
    argv = [binary, "record", "--format", "raw", "--rate", str(RATE_HZ * 2), "--output", str(raw), "--"]
    run = subprocess.run(argv + verify_argv(config, flow, topics), capture_output=True, text=True, timeout=1800)
    if run.returncode not in (0, 3, 4) or not raw.exists():
        return {"note": f"py-spy run failed ({run.returncode}): {run.stderr.strip()[-500:]}"}
    profile = parse_collapsed(raw.read_text(errors="replace"), lambda _process, _frames: "verify").get("verify")
    return profile.as_dict() if profile is not None else {"note": "py-spy took no samples"}


def run(options: BenchOptions, verifications: Sequence[Verification], profile: dict[str, Any] | None = None) -> Section:
    """One row per record size and tool: median rates over the runs, and whether every copy verified clean;
    `profile`: py-spy's summary of one more verification, if one ran."""
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
        f"({slowest.records_per_cpu_s:,.0f} records/s).",
    ]
    if not all(v.clean for v in verifications):
        notes.append("A copy did not verify clean: see the raw totals (a finding here is a loss to investigate).")
    if profile and profile.get("top_self"):
        where = ", ".join(f"{name} {share:.0%}" for name, share in profile["top_self"][:8])
        what = profile.get("what", "one copy")
        notes.append(f"Where a verification's CPU went ({what}; py-spy, busy samples, by self time): {where}.")
    return Section(
        key=KEY,
        title="Verifying a copy (strait verify)",
        method=(
            "After each throughput copy above (or, with `--only verify`, each copy made for this section alone, the "
            "same data sets) reached its last record and the tool stopped, the benchmark runs `strait verify --json` "
            "on the flow (in its own process, one partition after another): every source record and every target "
            "record is read (read_committed, as record batches) and compared by key, value, headers, timestamp and "
            "order; a target batch that holds its source batch's record bytes (a batch Strait forwarded as it was) is "
            "compared whole, the others record by record. *CPU s* is the verify process's CPU time while it verified "
            "(its fetch thread included, its start-up not); rates count the keys, values and headers read on both "
            "clusters, per CPU second. MM2 has no verifier; its copies (batched anew by its producer, so compared "
            f"record by record) are verified by the same engine. Medians over {options.repeats} runs per tool and "
            "record size."
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
        raw={
            "runs": [{"tool": v.tool, "records": v.records_label, **v.totals} for v in verifications],
            "profile": profile or {},
        },
        notes=notes,
    )
