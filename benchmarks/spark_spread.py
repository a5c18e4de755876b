"""Section 10: spread over a Spark cluster. Strait copies 1,000 partitions on a standalone Spark cluster of two
workers, and one worker is killed while a steady load runs.

Measured per run: where the copy tasks ran before the kill (tasks per worker), how long partitions waited until
they copied again (each partition's first growth on the target after the kill; the longest is the recovery), and,
once the load stopped and the copy caught up, `strait verify` over every topic: nothing lost, nothing altered.
MM2 is not run here: its tasks spread over a Connect cluster, another deployment; this is Strait's own recovery.
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from benchmarks.console import say
from benchmarks.contenders import MirrorSetup, StraitMirror, mirror_properties
from benchmarks.lab import Lab, RemoteEnds, create_topics, delete_topics, wait_until
from benchmarks.model import BenchOptions, Section
from benchmarks.scale import POLL_S, Shape, fill_topics, load_command
from benchmarks.tables import median, num
from shared.config import load_mm2_config
from shared.localkafka.mirror_maker import write_properties
from shared.localspark import SparkStandaloneCluster
from shared.verify.flow_check import VerifyScope, verify_flow

KEY = "cluster"
WORKERS = 2
CORES_PER_WORKER = 2
RATE = 10_000
LOAD_S = 30.0
KILL_AFTER_S = 10.0  # into the steady load
SETTLE_S = 1.0  # after the kill, what the killed tasks had sent lands; the partitions' ends are read then
STALLED_S = 2.0  # a partition that did not grow for this long after the kill waited for the copy to come back
CATCH_UP_TIMEOUT_S = 300


def shape(quick: bool) -> Shape:
    """1,000 partitions (100 topics x 10) with a small backlog; quick: 100."""
    return Shape(10, 10, 10_000) if quick else Shape(100, 10, 100_000)


@dataclass
class SpreadRun:
    """One run: copy tasks per worker before the kill, each partition's wait after it, the verification."""

    tasks_per_worker: list[int]
    killed_worker: int
    resumed_s: dict[str, float]  # "topic-partition" -> seconds from the kill to its first growth after it
    verified: int
    lost: int
    altered: int
    duplicates: int
    records: int

    @property
    def stalled(self) -> list[float]:
        """The waits of the partitions the kill stopped."""
        return [wait for wait in self.resumed_s.values() if wait >= STALLED_S]

    def as_dict(self) -> dict[str, Any]:
        """Plain data for the raw samples."""
        stalled = self.stalled
        return {
            "tasks_per_worker": self.tasks_per_worker,
            "killed_worker": self.killed_worker,
            "partitions": len(self.resumed_s),
            "stalled_partitions": len(stalled),
            "stalled_median_s": round(median(stalled), 2) if stalled else None,
            "stalled_max_s": round(max(stalled), 2) if stalled else None,
            "records": self.records,
            "verified": self.verified,
            "lost": self.lost,
            "altered": self.altered,
            "duplicates": self.duplicates,
        }


def run(options: BenchOptions, lab: Lab) -> Section:
    """`options.repeats` runs, each on a fresh Spark cluster and fresh topics."""
    runs = [measure(lab, shape(options.quick), options.tasks) for _ in range(options.repeats)]
    return _section(options, runs)


def measure(lab: Lab, size: Shape, tasks: int) -> SpreadRun:
    """Start the cluster and Strait on it, catch up a backlog, then kill a worker under a steady load."""
    source_alias, target_alias = lab.aliases()
    prefix = f"spread-{source_alias}-"
    topics = [f"{prefix}{index:04d}" for index in range(size.topics)]
    remote = [f"{source_alias}.{topic}" for topic in topics]
    run_dir = lab.run_dir(f"{source_alias}-strait-spread-{size.partitions}")
    spark = SparkStandaloneCluster(
        run_dir / "spark", workers=WORKERS, cores_per_worker=CORES_PER_WORKER, memory_mb=1024
    ).start()
    create_topics(lab.source_admin(), topics, size.per_topic)
    fill_topics(lab, run_dir, "fill", topics, size.per_topic, ["--records", str(size.backlog), "--keys"])
    setup = MirrorSetup(source_alias, target_alias, topics=f"{prefix}.*", tasks=tasks)
    props = mirror_properties(setup, lab.source.bootstrap_servers, lab.target.bootstrap_servers)
    props.update(_spark_settings(spark))
    config = write_properties(run_dir / "mm2.properties", props)
    mirror = StraitMirror(config, run_dir, tasks, spark_master=spark.master_url)
    probe = RemoteEnds(lab.target.client_properties(), remote, size.per_topic)
    say(f"Strait on a Spark cluster of {WORKERS} workers: {size.label} partitions")
    try:
        mirror.start()
        wait_until(lambda: sum(probe.ends().values()) >= size.backlog, CATCH_UP_TIMEOUT_S, "the backlog copied", 1)
        placed = _tasks_per_worker(spark)
        killed = max(range(WORKERS), key=lambda index: placed[index])
        say(f"Strait: copy tasks per worker {placed}; killing worker {killed} {KILL_AFTER_S:g} s into the load")
        written, resumed = _load_and_kill(lab, run_dir, spark, killed, probe, topics, size)
        wait_until(lambda: sum(probe.ends().values()) >= size.backlog + written, CATCH_UP_TIMEOUT_S, "the load copied")
        if not mirror.alive():
            raise RuntimeError(f"Strait exited after the kill; its log ends with:\n{mirror.log_tail()}")
        mirror.stop()
        say("Strait: verifying every topic")
        flow = load_mm2_config(config).flow_named(f"{source_alias}->{target_alias}")
        totals = verify_flow(flow, VerifyScope(topics=f"{prefix}.*")).totals
    finally:
        probe.close()
        mirror.stop()
        spark.stop()
        delete_topics(lab.target_admin(), remote)
        delete_topics(lab.source_admin(), topics)
    result = SpreadRun(
        placed,
        killed,
        resumed,
        totals.verified,
        totals.lost,
        totals.altered,
        totals.duplicates,
        size.backlog + written,
    )
    stalled = result.stalled
    say(
        f"Strait: {len(stalled)} partitions waited after the kill, the longest {max(stalled, default=0):.1f} s; "
        f"verified {totals.verified:,} of {result.records:,}, lost {totals.lost}"
    )
    return result


def _spark_settings(spark: SparkStandaloneCluster) -> dict[str, str]:
    """What a driver on this machine needs for the cluster: loopback, its secret, small executors."""
    return {
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.executor.memory": "512m",
        "spark.scheduler.minRegisteredResourcesRatio": "1.0",
        "spark.authenticate.secret": spark.secret,
    }


def _tasks_per_worker(spark: SparkStandaloneCluster) -> list[int]:
    """Copy tasks running under each worker: Python workers forked by an executor's Python daemon (data-mirror's
    `spark.python.daemon.module`, so a Python process whose parent is one, whatever the daemon's module)."""
    counts = []
    for worker in spark.workers:
        running = 0
        if worker.pid is not None:
            for process in psutil.Process(worker.pid).children(recursive=True):
                try:
                    parent = process.parent()
                    if parent is not None and "python" in process.name() and "python" in parent.name():
                        running += 1
                except psutil.NoSuchProcess:
                    continue
        counts.append(running)
    return counts


def _load_and_kill(
    lab: Lab,
    run_dir: Path,
    spark: SparkStandaloneCluster,
    killed: int,
    probe: RemoteEnds,
    topics: list[str],
    size: Shape,
) -> tuple[int, dict[str, float]]:
    """RATE records/s for LOAD_S over every partition; the worker dies KILL_AFTER_S in. Returns the records
    written and, per partition, the seconds from the kill until its end on the target grew past where it was."""
    listing = run_dir / "steady-topics.txt"
    listing.write_text("\n".join(topics) + "\n")
    extra = ["--rate", str(RATE), "--seconds", str(LOAD_S), "--keys"]
    generator = subprocess.Popen(
        load_command(lab, listing, size.per_topic, extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    began = time.monotonic()
    at_kill: dict[tuple[str, int], int] | None = None
    killed_at = 0.0
    resumed: dict[str, float] = {}
    try:
        while generator.poll() is None:
            if not killed_at and time.monotonic() - began >= KILL_AFTER_S:
                spark.kill_worker(killed)
                killed_at = time.monotonic()
            elif at_kill is None and killed_at and time.monotonic() - killed_at >= SETTLE_S:
                at_kill = probe.ends()  # after what the killed tasks had sent landed: only copying moves it on
            elif at_kill is not None:
                ends, now = probe.ends(), time.monotonic() - killed_at
                for key, end in ends.items():
                    name = f"{key[0]}-{key[1]}"
                    if name not in resumed and end > at_kill.get(key, 0):
                        resumed[name] = now
            time.sleep(POLL_S)
        out, err = generator.communicate()
        if generator.returncode != 0:
            raise RuntimeError(f"load generator failed: {err[-2000:]}")
    finally:
        if generator.poll() is None:
            generator.kill()
    if at_kill is None:
        raise RuntimeError("the load ended before the kill")
    for key in at_kill:  # a partition that never grew while the load ran: it waited at least the rest of the load
        resumed.setdefault(f"{key[0]}-{key[1]}", time.monotonic() - killed_at)
    counts = json.loads(out.strip().splitlines()[-1])
    return int(counts["sent"]), resumed


# -- the report ------------------------------------------------------------------------------------------
HEADERS = [
    "run",
    "copy tasks per worker",
    "partitions that waited",
    "their wait: median / longest (s)",
    "records",
    "verified",
    "lost",
    "altered",
    "duplicates",
]


def _section(options: BenchOptions, runs: list[SpreadRun]) -> Section:
    rows = []
    for index, result in enumerate(runs, 1):
        stalled = result.stalled
        rows.append(
            [
                str(index),
                " / ".join(str(count) for count in result.tasks_per_worker),
                f"{len(stalled):,} of {len(result.resumed_s):,}",
                f"{num(median(stalled), 1)} / {num(max(stalled), 1)}" if stalled else "-",
                num(result.records),
                num(result.verified),
                num(result.lost),
                num(result.altered),
                num(result.duplicates),
            ]
        )
    size = shape(options.quick)
    return Section(
        key=KEY,
        title="10. Spread over a Spark cluster: a worker killed at 1,000 partitions",
        method=(
            f"Strait alone (topic-sync and data-mirror, {options.tasks} copy tasks) on a standalone Spark cluster "
            f"of {WORKERS} workers with {CORES_PER_WORKER} cores each (`shared/localspark.py`, on this machine), "
            f"copying {size.label} partitions of fresh topics. A backlog of {size.backlog:,} records of 1 KiB is "
            f"copied first; then {RATE:,} records/s go round-robin over every partition for {LOAD_S:g} s, and "
            f"{KILL_AFTER_S:g} s in, the worker running the most copy tasks is killed (SIGKILL of its JVM, its "
            "executor and Python workers). *Copy tasks per worker* counts the Python workers running a task under "
            f"each worker just before the kill. The remote topics' end offsets are read {SETTLE_S:g} s after the "
            f"kill (what the killed tasks had sent has landed by then), then every {POLL_S:g} s: a partition's "
            "*wait* is the time from the kill until its end grew past that reading; *partitions that waited* are "
            f"those whose end did not grow for {STALLED_S:g} s or more after the kill: the killed worker's, and on a "
            "machine this small also the surviving task's, slowed while a replacement executor starts beside it "
            "under the load. The longest wait is the time until every partition copies again. Once the load "
            "stopped and "
            "the target held at least every record written, Strait stopped and `strait verify` compared every "
            "topic record by record (at-least-once: records copied again after the kill count as *duplicates*)."
        ),
        headers=HEADERS,
        rows=rows,
        settings={
            "spark": f"{WORKERS} workers x {CORES_PER_WORKER} cores, spark.executor.memory=512m; data-mirror's "
            "defaults for a standalone master: spark.executor.cores=1, spark.cores.max = copy tasks",
            "tools": "Strait only, with the properties file of section 9",
        },
        raw={"runs": [r.as_dict() for r in runs]},
        notes=[],
    )
