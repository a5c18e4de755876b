"""Section 7: checkpoints at 10,000 groups. Every group of a 10-partition topic commits continuously on A; how far
behind its commits the checkpoints on B are, and what the checkpointing process costs in CPU and memory: MM2's
checkpoint connector (interval 1 s) against Strait's checkpoint service."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from benchmarks.checkpoint_follower import CheckpointFollower, Written, checkpoint_delays, commit_lags
from benchmarks.cluster_pair import cluster_pair, wait_mirrored
from benchmarks.contenders import MM2_HEAP_MB
from benchmarks.failover_precision import mm2_properties
from benchmarks.group_committer import PacedCommitter, TimedCommit
from benchmarks.mm2_checkpoint_connector import checkpoint_connector
from benchmarks.model import BenchOptions, Section, percentile
from benchmarks.precision_data import prepare_groups
from benchmarks.section_text import run_standalone
from benchmarks.strait_processes import StraitProcesses
from benchmarks.usage import UsageSampler
from shared.localkafka.mirror_maker import MirrorMakerProcess, write_properties
from tests.support.mm2_config import write_mm2_config

CHECKPOINTS_TOPIC = "A.checkpoints.internal"
SEED = 2611
MM2_INTERVAL_S = 1
START_TIMEOUT_S = 600  # a first round over 10,000 groups, on a busy 2-core machine
QUIET_S = 30  # after the commits stop: no new checkpoint for this long ends the run
MAX_DRAIN_S = 300
STALL_LIMIT_S = 0.1
WINDOW_S = 10


@dataclass(frozen=True)
class Sizes:
    """How big the run is."""

    groups: int
    partitions: int
    records: int  # per partition, mirrored before anything is measured
    rate: float  # group commits per second (each moves every partition of the group)
    commits_s: float
    idle_s: float  # measured before the commits start, for the idle cost
    max_step: int  # a commit moves a partition by 1..max_step records


FULL = Sizes(groups=10_000, partitions=10, records=1000, rate=1000, commits_s=60, idle_s=10, max_step=20)
QUICK = Sizes(groups=500, partitions=4, records=300, rate=100, commits_s=15, idle_s=5, max_step=20)


@dataclass
class Run:
    """One tool's measurements."""

    label: str
    topic: str
    sent: int = 0
    acknowledged: int = 0
    failed: int = 0
    first_round_s: float | None = None
    checkpointed_at_start: int = 0
    idle_cpu_pct: float = 0.0
    busy_cpu_pct: float = 0.0
    peak_rss_mib: float = 0.0
    lags_ms: list[float] = field(default_factory=list)
    delays_ms: list[float] = field(default_factory=list)
    uncovered: int = 0
    windows: list[tuple[int, int, str, str]] = field(default_factory=list)  # (start s, commits, p50, p99)
    checkpoint_records: int = 0
    stalls: dict[str, float] | None = None  # Strait only: the event loop's stalls during the commits


def _groups(topic: str, sizes: Sizes) -> list[str]:
    return [f"{topic}-g{i:05d}" for i in range(sizes.groups)]


def _check(alive: Callable[[], str | None]) -> None:
    failure = alive()
    if failure:
        raise RuntimeError(failure)


def _first_round(follower: CheckpointFollower, total: int, alive: Callable[[], str | None]) -> tuple[float, int]:
    """Seconds until every group-partition has a checkpoint (of its offset 0), or until no new one came for 60 s."""
    began = time.monotonic()
    last_change, last_count = began, -1
    while True:
        count = follower.covered_partitions()
        now = time.monotonic()
        if count >= total:
            return now - began, count
        if count != last_count:
            last_change, last_count = now, count
        if now - began > START_TIMEOUT_S or (count > 0 and now - last_change > 60):
            return now - began, count
        _check(alive)
        time.sleep(0.5)


def _loop_stalls(metrics_url: str) -> dict[str, float]:
    """The checkpoint service's event-loop stall histograms (samples, samples within 100 ms late and held, longest
    since start) and its full garbage collections (count, seconds in all, longest since start)."""
    text = httpx.get(metrics_url, timeout=10).text
    found = dict.fromkeys(("samples", "within_limit", "max_s", "held_within_limit", "held_max_s"), 0.0)
    found |= dict.fromkeys(("full_gcs", "full_gc_s", "gc_max_s"), 0.0)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "strait_event_loop_stall_seconds_count":
                found["samples"] = sample.value
            elif sample.name == "strait_event_loop_stall_seconds_bucket" and float(sample.labels["le"]) == 0.1:
                found["within_limit"] = sample.value
            elif sample.name == "strait_event_loop_stall_max_seconds":
                found["max_s"] = sample.value
            elif sample.name == "strait_event_loop_held_seconds_bucket" and float(sample.labels["le"]) == 0.1:
                found["held_within_limit"] = sample.value
            elif sample.name == "strait_event_loop_held_max_seconds":
                found["held_max_s"] = sample.value
            elif sample.name == "strait_gc_pause_seconds_count" and sample.labels["generation"] == "2":
                found["full_gcs"] = sample.value
            elif sample.name == "strait_gc_pause_seconds_sum" and sample.labels["generation"] == "2":
                found["full_gc_s"] = sample.value
            elif sample.name == "strait_gc_pause_max_seconds":
                found["gc_max_s"] = sample.value
    return found


def _measure(
    run: Run,
    a_props: Mapping[str, str],
    follower: CheckpointFollower,
    pid: int,
    sizes: Sizes,
    alive: Callable[[], str | None],
    metrics_url: str | None = None,
) -> None:
    """Idle cost, then the groups committing for `commits_s`, then until the checkpoints stop; fills `run`."""
    sampler = UsageSampler(run.label, "checkpoint", {"checkpoint": pid}, lambda *_: "checkpoint").start()
    cpu_idle_start = sampler.cpu_total()
    time.sleep(sizes.idle_s)
    cpu_busy_start = sampler.cpu_total()
    run.idle_cpu_pct = 100 * (cpu_busy_start - cpu_idle_start) / sizes.idle_s
    stalls_before = _loop_stalls(metrics_url) if metrics_url else None
    committer = PacedCommitter(
        a_props,
        run.topic,
        _groups(run.topic, sizes),
        partitions=sizes.partitions,
        end_offset=sizes.records,
        rate=sizes.rate,
        max_step=sizes.max_step,
        seed=SEED,
    )
    began = time.monotonic()
    committer.run(sizes.commits_s)
    run.busy_cpu_pct = 100 * (sampler.cpu_total() - cpu_busy_start) / (time.monotonic() - began)
    if stalls_before is not None and metrics_url:
        after = _loop_stalls(metrics_url)
        run.stalls = {
            "samples": after["samples"] - stalls_before["samples"],
            "over_100ms": (after["samples"] - after["within_limit"])
            - (stalls_before["samples"] - stalls_before["within_limit"]),
            "max_since_start_ms": round(after["max_s"] * 1000, 1),
            "held_over_100ms": (after["samples"] - after["held_within_limit"])
            - (stalls_before["samples"] - stalls_before["held_within_limit"]),
            "held_max_since_start_ms": round(after["held_max_s"] * 1000, 1),
            "full_gcs": after["full_gcs"] - stalls_before["full_gcs"],
            "full_gc_ms": round((after["full_gc_s"] - stalls_before["full_gc_s"]) * 1000, 1),
            "longest_gc_since_start_ms": round(after["gc_max_s"] * 1000, 1),
        }
    _drain(follower, alive)
    run.peak_rss_mib = sampler.finish().peak_total_rss_mib
    written = follower.stop()
    run.sent, run.acknowledged, run.failed = committer.sent, committer.acknowledged, len(committer.failed)
    run.checkpoint_records = follower.records
    run.lags_ms, run.uncovered = commit_lags(committer.commits, written)
    run.delays_ms = checkpoint_delays(committer.commits, written)
    run.windows = _windows(committer.commits, written)


def _windows(commits: list[TimedCommit], written: Written) -> list[tuple[int, int, str, str]]:
    """Lag p50 and p99 of the commits of each `WINDOW_S` of the run: is a tool keeping up, or falling behind?"""
    if not commits:
        return []
    first = min(commit.acked_ms for commit in commits)
    by_window: dict[int, list[TimedCommit]] = {}
    for commit in commits:
        by_window.setdefault(int((commit.acked_ms - first) / 1000 // WINDOW_S), []).append(commit)
    rows = []
    for index, members in sorted(by_window.items()):
        lags, _ = commit_lags(members, written)
        rows.append((index * WINDOW_S, len(members), _ms(lags, 0.5), _ms(lags, 0.99)))
    return rows


def _drain(follower: CheckpointFollower, alive: Callable[[], str | None]) -> None:
    """Until no checkpoint arrived for QUIET_S (a tool's last round can take a while), at most MAX_DRAIN_S."""
    began = time.monotonic()
    last_count, last_change = follower.records, began
    while time.monotonic() - last_change < QUIET_S and time.monotonic() - began < MAX_DRAIN_S:
        _check(alive)
        time.sleep(1)
        if follower.records != last_count:
            last_count, last_change = follower.records, time.monotonic()


def _run_strait(run: Run, sizes: Sizes, workdir: Path, tasks: int) -> None:
    with cluster_pair() as (a, b):
        prepare_groups(a.client_properties(), run.topic, sizes.partitions, sizes.records, _groups(run.topic, sizes))
        flow = {
            "topics": run.topic,
            "groups": f"{run.topic}-g.*",
            "sync.group.offsets.enabled": "false",
            "emit.heartbeats.enabled": "false",
            "sync.topic.acls.enabled": "false",
        }
        config = write_mm2_config(workdir / "strait.properties", {"A": a, "B": b}, {"A->B": flow})
        with StraitProcesses(config, workdir / "logs", tasks) as strait:
            checkpoint = next(p for p in strait.processes if p.package == "checkpoint")
            port = checkpoint.wait_for_log("service_starting", timeout_s=START_TIMEOUT_S)["metrics_port"]
            remote = f"A.{run.topic}"
            wait_mirrored(
                b.client_properties(), remote, sizes.partitions * sizes.records, strait.alive, START_TIMEOUT_S
            )
            follower = CheckpointFollower(b.client_properties(), CHECKPOINTS_TOPIC, remote).start()
            total = sizes.groups * sizes.partitions
            run.first_round_s, run.checkpointed_at_start = _first_round(follower, total, strait.alive)
            assert checkpoint.popen is not None
            _measure(
                run,
                a.client_properties(),
                follower,
                checkpoint.popen.pid,
                sizes,
                strait.alive,
                f"http://127.0.0.1:{port}/metrics",
            )


def _run_mm2(run: Run, sizes: Sizes, workdir: Path, tasks: int) -> None:
    """MM2 mirrors the data (checkpoints off) and stops; then its checkpoint connector runs alone."""
    with cluster_pair() as (a, b):
        prepare_groups(a.client_properties(), run.topic, sizes.partitions, sizes.records, _groups(run.topic, sizes))
        groups = f"{run.topic}-g.*"
        props = mm2_properties(a, b, run.topic, groups, tasks) | {
            "A->B.emit.checkpoints.enabled": "false",
            "A->B.refresh.groups.interval.seconds": "600",  # the default: no group listing while it mirrors
        }
        mirror = MirrorMakerProcess(
            write_properties(workdir / "mm2.properties", props), log_path=workdir / "logs" / "mm2.log"
        )
        remote = f"A.{run.topic}"
        try:
            mirror.start()

            def mirror_alive() -> str | None:
                return None if mirror.is_running() else f"MirrorMaker 2 exited: {mirror.log_tail()}"

            wait_mirrored(
                b.client_properties(), remote, sizes.partitions * sizes.records, mirror_alive, START_TIMEOUT_S
            )
            time.sleep(10)  # its offset syncs are flushed every 5 s (B.offset.flush.interval.ms)
        finally:
            mirror.stop(timeout_s=60)
        connector = checkpoint_connector(
            a,
            b,
            workdir,
            name="mm2-checkpoint",
            topics=run.topic,
            groups=groups,
            tasks=tasks,
            interval_s=MM2_INTERVAL_S,
            jvm_options=[f"-Xlog:gc:file={workdir / 'logs' / 'mm2-checkpoint-gc.log'}"],
        )
        try:
            connector.start()

            def alive() -> str | None:
                return None if connector.is_running() else f"the checkpoint connector exited: {connector.log_tail()}"

            follower = CheckpointFollower(b.client_properties(), CHECKPOINTS_TOPIC, remote).start()
            total = sizes.groups * sizes.partitions
            run.first_round_s, run.checkpointed_at_start = _first_round(follower, total, alive)
            assert connector.pid is not None
            _measure(run, a.client_properties(), follower, connector.pid, sizes, alive)
        finally:
            connector.stop(timeout_s=60)


def _window_text(run: Run) -> str:
    return ", ".join(f"{start}-{start + WINDOW_S} s: {p99}" for start, _count, _p50, p99 in run.windows) or "-"


def _gc_note(gc_log: Path) -> str:
    """How long MM2's JVM was paused by its garbage collector (heap as in the other sections)."""
    if not gc_log.exists():
        return "MM2's garbage-collection log is missing."
    pauses = [float(m.group(1)) for m in re.finditer(r"Pause .* (\d+\.\d+)ms$", gc_log.read_text(), re.MULTILINE)]
    return (
        f"MM2's checkpoint JVM (heap {MM2_HEAP_MB} MiB, serial GC as in the other sections) paused "
        f"{len(pauses)} times for garbage collection, {sum(pauses) / 1000:.1f} s in all."
    )


def _ms(samples: list[float], fraction: float) -> str:
    return f"{percentile(samples, fraction):.0f}" if samples else "-"


def _row(run: Run, sizes: Sizes) -> list[str]:
    committed = run.acknowledged * sizes.partitions
    return [
        run.label,
        f"{run.acknowledged / sizes.commits_s:.0f}",
        _ms(run.lags_ms, 0.5),
        _ms(run.lags_ms, 0.99),
        f"{run.uncovered} of {committed}",
        _ms(run.delays_ms, 0.5),
        _ms(run.delays_ms, 0.99),
        f"{run.idle_cpu_pct:.0f}",
        f"{run.busy_cpu_pct:.0f}",
        f"{run.peak_rss_mib:.0f}",
    ]


def _raw(run: Run) -> dict[str, Any]:
    return {
        "group commits sent / acknowledged / failed": [run.sent, run.acknowledged, run.failed],
        "first round s (every group-partition checkpointed at offset 0)": run.first_round_s,
        "group-partitions checkpointed at start": run.checkpointed_at_start,
        "checkpoint records during the run": run.checkpoint_records,
        "lag ms p90 / max": [_ms(run.lags_ms, 0.9), _ms(run.lags_ms, 1.0)],
        "delay ms p90 / max": [_ms(run.delays_ms, 0.9), _ms(run.delays_ms, 1.0)],
        "event-loop stalls during the commits": run.stalls,
        f"lag by {WINDOW_S} s of commits (start s, commits, p50 ms, p99 ms)": run.windows,
    }


def run(options: BenchOptions) -> Section:
    """Strait, then MM2's checkpoint connector, each on a fresh pair of clusters."""
    sizes = QUICK if options.quick else FULL
    workdir = options.workdir / "checkpoint-scale"
    for tool in ("strait", "mm2"):
        (workdir / tool / "logs").mkdir(parents=True, exist_ok=True)
    prefix = f"cs-{uuid.uuid4().hex[:6]}"
    strait = Run("Strait (streamed, coalescing 200 ms)", f"{prefix}-s")
    mm2 = Run(f"MM2 checkpoint connector (interval {MM2_INTERVAL_S} s)", f"{prefix}-m")
    _run_strait(strait, sizes, workdir / "strait", options.tasks)
    _run_mm2(mm2, sizes, workdir / "mm2", options.tasks)
    runs = [mm2, strait]
    stalls = strait.stalls or {}
    total = sizes.groups * sizes.partitions
    notes = [
        "Lag: from a commit's acknowledgement to the first checkpoint on B whose upstream offset reaches it (what a "
        "failover at that moment would lose). Delay: from a commit to the checkpoint carrying exactly its offset, "
        "for the positions a tool did checkpoint; it is the delay of the round or stream itself.",
        "MM2 writes a checkpoint only when a group's translated offset moves, and translates to the nearest offset "
        "sync it keeps, so a commit between two syncs is covered only by a later commit that crosses one, or not "
        "at all: its lag includes the group's time to its next such commit.",
        f"Strait's event loop during the commits: {stalls.get('over_100ms', 0):.0f} of "
        f"{stalls.get('samples', 0):.0f} samples (every 50 ms) late by more than {STALL_LIMIT_S * 1000:.0f} ms; "
        f"longest since the service started {stalls.get('max_since_start_ms', 0):.0f} ms. On 2 cores shared with "
        "two brokers and the committing client, a sample is also late when the process is not scheduled; held "
        f"(the loop's thread computing) more than {STALL_LIMIT_S * 1000:.0f} ms: "
        f"{stalls.get('held_over_100ms', 0):.0f} samples, the longest since the start "
        f"{stalls.get('held_max_since_start_ms', 0):.0f} ms. Full "
        f"garbage collections during the commits: {stalls.get('full_gcs', 0):.0f}, "
        f"{stalls.get('full_gc_ms', 0):.0f} ms in all; the longest collection since the start "
        f"{stalls.get('longest_gc_since_start_ms', 0):.0f} ms.",
        f"First round (every group-partition checkpointed at offset 0): Strait {strait.first_round_s or 0:.1f} s "
        f"after the data was mirrored, {strait.checkpointed_at_start:,} of {total:,}; MM2 "
        f"{mm2.first_round_s or 0:.1f} s after its connector's start (JVM start included), "
        f"{mm2.checkpointed_at_start:,} of {total:,}. The commits start after at most {START_TIMEOUT_S} s.",
        f"Lag p99 by {WINDOW_S} s of commits: Strait {_window_text(strait)}; MM2 {_window_text(mm2)}.",
        _gc_note(options.workdir / "checkpoint-scale" / "mm2" / "logs" / "mm2-checkpoint-gc.log"),
    ]
    return Section(
        key="checkpoint_scale",
        title=f"Checkpoints at {sizes.groups:,} groups",
        method=(
            f"For each tool a fresh pair of single-broker clusters A and B. A topic of {sizes.partitions} "
            f"partitions x {sizes.records} records on A is mirrored to B, and {sizes.groups:,} consumer groups "
            "are committed at offset 0 before the checkpointing starts. After every group-partition has its first "
            f"checkpoint and {sizes.idle_s:.0f} s idle, one client commits for {sizes.commits_s:.0f} s, "
            f"{sizes.rate:.0f} groups per second in turn, each commit moving every partition of the group 1 to "
            f"{sizes.max_step} records (a group commits every {sizes.groups / sizes.rate:.0f} s). The run ends "
            f"when no checkpoint has arrived for {QUIET_S} s. Strait: topic-sync, data-mirror and checkpoint as "
            "processes with default settings; CPU and RSS are the checkpoint process's. MM2: dedicated-mode MM2 "
            "mirrors the data with checkpoints off and stops; then `MirrorCheckpointConnector` runs alone in a "
            f"Connect standalone worker (same Kafka release, tasks.max={options.tasks}, interval "
            f"{MM2_INTERVAL_S} s), reading the offset syncs MM2 wrote; CPU and RSS are that JVM's. CPU is % of "
            "one core: idle before the commits, busy while committing."
        ),
        headers=[
            "tool",
            "group commits/s",
            "lag p50 ms",
            "lag p99 ms",
            "not covered",
            "delay p50 ms",
            "delay p99 ms",
            "CPU idle %",
            "CPU busy %",
            "peak RSS MiB",
        ],
        rows=[_row(r, sizes) for r in runs],
        settings={
            "groups x partitions": f"{sizes.groups:,} x {sizes.partitions}",
            "commit rate (target)": f"{sizes.rate:.0f} group commits/s",
            "MM2 checkpoint tasks": str(options.tasks),
            "seed": str(SEED),
        },
        raw={r.label: _raw(r) for r in runs},
        notes=notes,
    )


def main() -> None:
    """Run the section standalone (small sizes unless --full) and print it."""
    run_standalone(run, __doc__)


if __name__ == "__main__":
    main()
