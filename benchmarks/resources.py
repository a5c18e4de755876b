"""Section 6: CPU seconds and peak memory per process, from the throughput and latency runs' samples."""

from __future__ import annotations

from collections.abc import Sequence

from benchmarks.contenders import MM2, SPARK_JVM, STRAIT, TOOLS, WORKERS
from benchmarks.model import BenchOptions, Section
from benchmarks.tables import best_median, median, num, percent
from benchmarks.usage import SAMPLE_INTERVAL_S, Usage

KEY = "resources"
TOTAL = "all processes"


def run(options: BenchOptions, usage: Sequence[Usage]) -> Section:
    """One row per scenario, tool and process role, plus the tool's total."""
    scenarios = list(dict.fromkeys(u.scenario for u in usage))
    rows: list[list[str]] = []
    for scenario in scenarios:
        for tool in TOOLS:
            runs = [u for u in usage if u.scenario == scenario and u.tool == tool]
            if runs:
                rows += _rows(scenario, tool, runs)
    return Section(
        key=KEY,
        title="Resources",
        method=(
            "Measured during the throughput and latency runs above (no extra runs). Every "
            f"{SAMPLE_INTERVAL_S:g} s the benchmark walks each tool's process tree with psutil: Strait is topic-sync "
            "and data-mirror (Python), Spark's driver JVM (started by spark-submit below data-mirror), the PySpark "
            "daemon and the Python workers it forks; MM2 is one JVM. *CPU s* is user+system time from the tool's "
            "start until the last record arrived (throughput) or the drain ended (latency), summed over every process "
            "ever seen; *start-up CPU* is the part spent before the first record reached the target, and *copy CPU per "
            "1M records* the rest divided by the records copied. *Peak RSS* is "
            "the largest sampled resident set (for a role with several processes, of their sum; the total row is "
            "the peak of the whole tree's sum, not the sum of peaks). At 10k records/s, *steady CPU* is the CPU "
            "seconds used per second of the measurement window (1.0 = one core busy). Cells are *best / median* "
            f"over the runs ({options.repeats} per tool and scenario)."
        ),
        headers=[
            "scenario",
            "tool",
            "process",
            "CPU s",
            "start-up CPU s",
            "copy CPU s per 1M records",
            "steady CPU (cores)",
            "peak RSS MiB",
        ],
        rows=rows,
        raw={"runs": [u.as_dict() for u in usage]},
        notes=_notes(usage),
    )


def _rows(scenario: str, tool: str, runs: Sequence[Usage]) -> list[list[str]]:
    roles = sorted({role for u in runs for role in u.cpu_s})
    rows = []
    for role in roles:
        cpu = [u.cpu_s.get(role, 0.0) for u in runs]
        rss = [u.peak_rss_mib.get(role, 0.0) for u in runs]
        rows.append([scenario, tool, role, best_median(cpu), "", "", "", best_median(rss, 0)])
    total_cpu = [u.total_cpu_s for u in runs]
    startup = [u.startup_cpu_s for u in runs if u.startup_cpu_s is not None]
    per_million = [
        (u.total_cpu_s - u.startup_cpu_s) / u.records * 1e6 for u in runs if u.records and u.startup_cpu_s is not None
    ]
    steady = [u.window_cpu_s / u.window_s for u in runs if u.window_cpu_s is not None and u.window_s]
    rows.append(
        [
            scenario,
            tool,
            f"**{TOTAL}**",
            best_median(total_cpu),
            best_median(startup) if startup else "",
            num(median(per_million), 1) if per_million else "",
            best_median(steady, 2) if steady else "",
            best_median([u.peak_total_rss_mib for u in runs], 0),
        ]
    )
    return rows


def _notes(usage: Sequence[Usage]) -> list[str]:
    notes = []
    more_cpu = more_memory = False
    for scenario in dict.fromkeys(u.scenario for u in usage):
        strait = [u for u in usage if u.scenario == scenario and u.tool == STRAIT]
        mm2 = [u for u in usage if u.scenario == scenario and u.tool == MM2]
        if not strait or not mm2:
            continue
        s_cpu, m_cpu = median([u.total_cpu_s for u in strait]), median([u.total_cpu_s for u in mm2])
        s_rss, m_rss = median([u.peak_total_rss_mib for u in strait]), median([u.peak_total_rss_mib for u in mm2])
        line = f"{scenario}: Strait used {num(s_cpu, 1)} CPU s and {num(s_rss)} MiB at peak, MM2 {num(m_cpu, 1)} CPU s "
        line += f"and {num(m_rss)} MiB (medians)."
        if s_cpu > m_cpu:
            line += f" Strait used {percent((s_cpu - m_cpu) / m_cpu)} more CPU."
        if s_rss > m_rss:
            line += f" Strait's peak memory is {percent((s_rss - m_rss) / m_rss)} higher."
        jvm = median([u.cpu_s.get(SPARK_JVM, 0.0) for u in strait])
        workers = median([u.cpu_s.get(WORKERS, 0.0) for u in strait])
        line += f" Of Strait's CPU, Spark's JVM took {num(jvm, 1)} s and the Python workers {num(workers, 1)} s"
        startup = [u.startup_cpu_s for u in strait if u.startup_cpu_s is not None]
        line += f"; {num(median(startup), 1)} s went before the first record arrived." if startup else "."
        notes.append(line)
        more_cpu |= s_cpu > m_cpu
        more_memory |= s_rss > m_rss
    if more_cpu:
        notes.append(
            "Why more CPU: records never pass through Spark's JVM, yet it is Strait's largest CPU user: JVM start-up "
            "(class loading, JIT), which a short benchmark copy does not amortise (its copy tasks are long-lived, so "
            "scheduling costs nothing per record); the Python workers' share is the copying itself plus PySpark's "
            "start-up imports. Closing it: less Python per record (batch forwarding) and a local mode without the "
            "JVM when Spark runs on one machine."
        )
    if more_memory:
        peaks = max((u for u in usage if u.tool == STRAIT), key=lambda u: u.peak_total_rss_mib).peak_rss_mib
        biggest = sorted(peaks.items(), key=lambda item: -item[1])[:3]
        notes.append(
            "Why more memory: Strait's peak is mostly "
            + ", ".join(f"{role} ({num(mib)} MiB)" for role, mib in biggest)
            + ": Spark's JVM (its classes and threads; its heap is 512 MiB at most and starts at 32 MiB) and one "
            "Python interpreter per worker, each holding up to the target producer's `buffer.memory` (32 MiB by "
            "default) of records in flight."
        )
    return notes
