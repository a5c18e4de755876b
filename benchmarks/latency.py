"""Section 2: end-to-end latency at a steady 10k records/s, source timestamp to arrival on the target."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, TopicPartition

from benchmarks.arrivals import Arrivals, measurement_window, record_identity
from benchmarks.console import say
from benchmarks.contenders import PRODUCER, STRAIT, TOOLS, MirrorSetup, open_mirror
from benchmarks.copy_check import HEADER, CopyCheck, check_copy, copy_notes, run_cells
from benchmarks.datasets import PARTITIONS
from benchmarks.findings import latency_notes
from benchmarks.lab import EndOffsets, Lab, delete_topics, make_topics, topic_exists, wait_until
from benchmarks.model import BenchOptions, Section, percentile
from benchmarks.producer_perf import perf_process
from benchmarks.tables import best_median, median, num
from benchmarks.usage import Usage, UsageSampler
from shared.kafka.factories import confluent_consumer, confluent_producer
from shared.localkafka.cluster import ClusterAddress

KEY = "latency"
FLOOR = "no replicator (floor)"  # the same load read on the source itself: what a zero-cost replicator would add to
RATE = 10_000
RECORD_SIZE = 1024
START_TIMEOUT_S = 240
DRAIN_TIMEOUT_S = 60


@dataclass(frozen=True)
class LatencyRun:
    """Latencies (ms) of the records whose source timestamp fell in the measurement window, each record once."""

    tool: str
    latencies_ms: list[float]
    window_s: float
    late: int  # distinct records of the window not on the target when the drain ended
    usage: Usage
    spark_jobs: int | None = None  # Strait: copy tasks (one Spark job each) started while the load ran
    load_s: float = 0.0
    duplicates: int = 0  # second copies the measuring consumer read (neither arrivals nor samples)
    check: CopyCheck | None = None  # the verifier on the run's copy; None for the floor (no copy)

    def stats(self) -> dict[str, float]:
        """p50, p99, max in ms."""
        samples = self.latencies_ms
        return {"p50": percentile(samples, 0.5), "p99": percentile(samples, 0.99), "max": max(samples)}

    def as_dict(self) -> dict[str, Any]:
        """Plain data for the raw samples (the full distribution would be too long: deciles and the tail)."""
        ordered = sorted(self.latencies_ms)
        marks = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 0.999]
        return {
            "tool": self.tool,
            "records": len(ordered),
            "late": self.late,
            "duplicates_read": self.duplicates,
            "verified_copy": None if self.check is None else self.check.as_dict(),
            "window_s": self.window_s,
            "percentiles_ms": {f"p{m * 100:g}": percentile(ordered, m) for m in marks},
            "min_ms": ordered[0],
            "max_ms": ordered[-1],
            "window_cpu_s": self.usage.window_cpu_s,
            "spark_jobs_started_under_load": self.spark_jobs,
            "load_s": round(self.load_s, 1),
        }


def durations(quick: bool) -> tuple[float, float]:
    """(warm-up after the first arrival, measurement window) in seconds."""
    return (3.0, 8.0) if quick else (5.0, 20.0)


def run(options: BenchOptions, lab: Lab) -> Section:
    """Per repeat: Strait, then MM2, each on its own fresh topic and flow."""
    warmup_s, window_s = durations(options.quick)
    runs: list[LatencyRun] = []
    for _ in range(options.repeats):
        for tool in (*TOOLS, FLOOR):
            result = measure(lab, tool, warmup_s, window_s)
            runs.append(result)
            if tool != FLOOR:
                lab.usage.append(result.usage)
    return section(options, runs, lab.profile)


def section(options: BenchOptions, runs: list[LatencyRun], profile: dict[str, Any] | None = None) -> Section:
    """The table (best / median per tool, each run's verified copy) and the notes; `profile`: Strait's, if any."""
    warmup_s, window_s = durations(options.quick)
    floor = [r.stats() for r in runs if r.tool == FLOOR]
    rows = []
    for tool in (*TOOLS, FLOOR):
        mine = [r for r in runs if r.tool == tool]
        stats = [r.stats() for r in mine]
        rows.append(
            [
                tool,
                best_median([s["p50"] for s in stats], 0),
                best_median([s["p99"] for s in stats], 0),
                best_median([s["max"] for s in stats], 0),
                _added(stats, floor, "p50") if tool != FLOOR else "-",
                _added(stats, floor, "p99") if tool != FLOOR else "-",
                num(sum(len(r.latencies_ms) for r in mine)),
                num(sum(r.late for r in mine)),
                run_cells([r.check for r in mine]) if tool != FLOOR else "-",
            ]
        )
    return Section(
        key=KEY,
        title="2. Latency at 10k records/s",
        method=(
            f"Per run a fresh {PARTITIONS}-partition source topic and flow. The tool starts; once one probe record "
            "per partition has reached the target (the tool is copying, its start-up is over), "
            f"kafka-producer-perf-test writes {RATE:,} records/s of {RECORD_SIZE} B to the source (each "
            "record stamped with the producer's wall clock at send time, CreateTime). A consumer on the target "
            "(in the benchmark process, same machine, same clock) takes each record's latency as its wall-clock "
            "receive time minus the record's timestamp: both tools keep the source timestamp, so this is "
            "source send → target arrival, including the source producer's linger, both brokers and the "
            f"consumer's fetch. Records sent in the {warmup_s:g} s after the first arrival are a warm-up; the "
            f"records sent in the next {window_s:g} s are measured; the producer then stops and the consumer "
            f"drains until every record written is on the target, up to {DRAIN_TIMEOUT_S} s. A record counts once "
            "(by its value, random letters per record): a second copy (an at-least-once replay) is neither an "
            "arrival nor a sample, and *late* counts the records of the window not on the target when the drain "
            "ended. Then the tool stops and the engine of `strait verify` compares the source topic with the "
            "remote one record by record (key, value, headers, timestamp, order): the last column gives, per run, "
            "the source records not on the target and the second copies it holds. "
            f"Runs alternate Strait, MM2 and the floor ({options.repeats} each); cells are *best / median* over runs "
            f"of each run's percentile, in ms. A run measures about {RATE * window_s:,.0f} records (more if the load "
            "generator, starved of CPU, caught up in bursts). *The floor* is the same load, producer and consumer "
            "with no replicator: the consumer reads the source topic itself, so its latency is the source "
            "producer's linger, the source broker and the consumer's fetch, which every replicator's figure "
            "contains too. *Added* is a tool's median percentile minus the floor's median at the same percentile: "
            "what the replicator itself (its fetch, its produce to the target, the target broker) costs."
        ),
        headers=[
            "tool",
            "p50 (ms)",
            "p99 (ms)",
            "max (ms)",
            "added p50 (ms)",
            "added p99 (ms)",
            "records measured",
            "late (not arrived)",
            HEADER,
        ],
        rows=rows,
        settings={
            "load": f"{RATE:,} records/s x {RECORD_SIZE} B, producer settings as the tools' target producer",
            "window": f"{warmup_s:g} s warm-up, {window_s:g} s measured",
        },
        raw={"runs": [r.as_dict() for r in runs]},
        notes=latency_notes({tool: [r.stats() for r in runs if r.tool == tool] for tool in TOOLS}, profile)
        + _jobs_note(runs)
        + copy_notes(
            (f"{tool} run {index}", result.check)
            for tool in TOOLS
            for index, result in enumerate((r for r in runs if r.tool == tool), 1)
        ),
    )


def _added(stats: list[dict[str, float]], floor: list[dict[str, float]], mark: str) -> str:
    """The tool's median percentile minus the floor's median at the same percentile."""
    if not stats or not floor:
        return "n/a"
    return num(median([s[mark] for s in stats]) - median([s[mark] for s in floor]))


def _jobs_note(runs: list[LatencyRun]) -> list[str]:
    """Strait's Spark scheduling in steady state: copy tasks are long-lived, so this should be about zero."""
    counted = [r for r in runs if r.spark_jobs is not None and r.load_s > 0]
    if not counted:
        return []
    jobs = sum(r.spark_jobs or 0 for r in counted)
    minutes = sum(r.load_s for r in counted) / 60
    return [
        f"Spark jobs Strait started while the load ran (steady state, after its tasks were copying): {jobs} in "
        f"{minutes:.1f} min over {len(counted)} runs, {jobs / minutes:.2f} per minute."
    ]


def _tasks_started(log_path: Path, start_ms: float, end_ms: float) -> int:
    """`task_started` lines of data-mirror's JSON log stamped between `start_ms` and `end_ms`."""
    count = 0
    for line in log_path.read_text(errors="replace").splitlines():
        if '"task_started"' not in line or not line.startswith("{"):
            continue
        try:
            stamp = datetime.fromisoformat(json.loads(line)["timestamp"]).timestamp() * 1000
        except (ValueError, KeyError, TypeError):
            continue
        count += start_ms <= stamp <= end_ms
    return count


def measure(
    lab: Lab,
    tool: str,
    warmup_s: float,
    window_s: float,
    source: ClusterAddress | None = None,
    source_consumer: tuple[tuple[str, str], ...] = (),
) -> LatencyRun:
    """One tool run under steady load; the latencies of the window's records. The floor (`FLOOR`) runs no tool:
    its consumer reads the source topic itself. `source`: how the tool reaches the source (default: directly);
    `source_consumer`: the tool's `<source>.consumer.*` settings."""
    source_alias, target_alias = lab.aliases()
    topic = f"bench-lat-{source_alias}"
    floor = tool == FLOOR
    remote = topic if floor else f"{source_alias}.{topic}"
    make_topics(lab.source_admin(), [topic], PARTITIONS)
    setup = MirrorSetup(
        source_alias, target_alias, topics=topic, tasks=lab.options.tasks, source_consumer=source_consumer
    )
    run_dir = lab.run_dir(f"{source_alias}-{'floor' if floor else tool.lower()}-latency")
    mirror = NoMirror() if floor else open_mirror(tool, setup, source or lab.source, lab.target, run_dir)
    load = perf_process(
        lab.source.bootstrap_servers,
        topic,
        int(RATE * (START_TIMEOUT_S + warmup_s + window_s)),
        RECORD_SIZE,
        log_path=run_dir / "load.log",
        throughput=RATE,
        producer=PRODUCER,
    )
    read_from = lab.source if floor else lab.target
    consumer = confluent_consumer(
        read_from.client_properties(),
        **{"group.id": "strait-bench-latency", "enable.auto.commit": False, "fetch.wait.max.ms": 50},
    )
    target_admin = lab.target_admin()
    say(f"{tool}: latency at {RATE:,} records/s ({source_alias}->{target_alias})")
    sampler: UsageSampler | None = None
    try:
        mirror.start()
        sampler = mirror.measure("10k records/s")
        if not floor:
            wait_until(lambda: topic_exists(target_admin, remote), START_TIMEOUT_S, f"{tool} to create {remote}", 0.5)
            _wait_until_copying(lab, topic, remote, mirror.alive)
        consumer.assign([TopicPartition(remote, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        load_started_ms = time.time() * 1000
        load.start()
        window: tuple[float, float] | None = None
        window_cpu_start: float | None = None
        arrivals = Arrivals()
        expected: int | None = None
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            messages = consumer.consume(num_messages=1000, timeout=0.05)
            now_ms = time.time() * 1000
            for message in messages:
                if message.error():
                    continue
                stamp = message.timestamp()[1]
                if window is None and stamp >= load_started_ms:  # the first record of the load, not a probe
                    window = measurement_window(now_ms, warmup_s, window_s)
                    arrivals.window = window
                identity = record_identity(remote, message.partition() or 0, message.key(), message.value())
                arrivals.add(identity, stamp, now_ms)
            if window is not None and window_cpu_start is None and now_ms >= window[0]:
                window_cpu_start = sampler.cpu_total()
            if window is not None and expected is None and now_ms >= window[1]:
                sampler.usage.window_cpu_s = sampler.cpu_total() - (window_cpu_start or 0.0)
                sampler.usage.window_s = window_s
                load.stop(timeout_s=10)
                expected = _source_total(lab, topic)
                deadline = time.monotonic() + DRAIN_TIMEOUT_S
            if expected is not None and arrivals.complete(expected):
                break
            if time.monotonic() > deadline:
                if window is None:
                    raise TimeoutError(f"no record reached the target through {tool}; log:\n{mirror.log_tail()}")
                break
            if not mirror.alive():
                raise RuntimeError(f"{tool} exited under load; its log ends with:\n{mirror.log_tail()}")
        usage = sampler.finish(arrivals.distinct)
    finally:
        if sampler is not None:
            sampler.finish()  # stops the sampling thread after an error
        load.stop(timeout_s=10)
        consumer.close()
        mirror.stop()
    check = None
    if not floor:
        say(f"{tool}: verifying the copy")
        check = check_copy(run_dir / "mm2.properties", setup.flow, re.escape(topic))
        say(f"{tool}: {check.summary()}")
        delete_topics(target_admin, [remote])
    latencies = arrivals.latencies_ms
    _keep_samples(run_dir / "latencies.tsv", arrivals.stamps_ms, latencies)
    assert window is not None
    late = arrivals.late(_records_between(lab, topic, window))
    if latencies:
        say(
            f"{tool}: p50 {percentile(latencies, 0.5):.0f} ms, p99 {percentile(latencies, 0.99):.0f} ms, "
            f"late {late}, second copies read {arrivals.duplicates}"
        )
    delete_topics(lab.source_admin(), [topic])
    if not latencies:
        raise RuntimeError(f"no record of the measurement window reached the target through {tool}")
    load_ended_ms = window[1]
    jobs = None
    if tool == STRAIT:
        jobs = _tasks_started(run_dir / "data-mirror.log", load_started_ms, load_ended_ms)
    load_s = (load_ended_ms - load_started_ms) / 1000
    return LatencyRun(tool, latencies, window_s, late, usage, jobs, load_s, arrivals.duplicates, check)


def _keep_samples(path: Path, stamps: list[int], latencies: list[float]) -> None:
    """Every measured record's send time and latency, for looking at when the tail happens (not in the report)."""
    path.write_text("".join(f"{stamp}\t{latency:.1f}\n" for stamp, latency in zip(stamps, latencies, strict=True)))


def _wait_until_copying(lab: Lab, topic: str, remote: str, alive: Callable[[], bool]) -> None:
    """One probe record per partition, then wait until all reached the target: the tool is copying, not starting."""
    producer = confluent_producer(lab.source.client_properties(), **{"linger.ms": 0})
    for partition in range(PARTITIONS):
        producer.produce(topic, value=b"probe", partition=partition)
    if producer.flush(30):
        raise RuntimeError(f"could not produce the probe records to {topic}")
    probe = EndOffsets(lab.target.client_properties(), remote, PARTITIONS)

    def copied() -> bool:
        if not alive():
            raise RuntimeError(f"the tool exited before copying {topic}")
        return probe.total() >= PARTITIONS

    try:
        wait_until(copied, START_TIMEOUT_S, f"the probe records of {topic} on the target", 0.1)
    finally:
        probe.close()


def _records_between(lab: Lab, topic: str, window: tuple[float, float]) -> int:
    """How many source records carry a timestamp in the window (one producer: timestamps rise per partition)."""
    consumer = confluent_consumer(lab.source.client_properties(), **{"group.id": "strait-bench-latency"})
    try:
        total = 0
        ends = [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(PARTITIONS)]
        bounds = []
        for stamp in window:
            found = consumer.offsets_for_times([TopicPartition(topic, p, int(stamp)) for p in range(PARTITIONS)], 10)
            bounds.append([tp.offset if tp.offset >= 0 else ends[tp.partition] for tp in found])
        for start, end in zip(bounds[0], bounds[1], strict=True):
            total += max(0, end - start)
        return total
    finally:
        consumer.close()


def _source_total(lab: Lab, topic: str) -> int:
    probe = EndOffsets(lab.source.client_properties(), topic, PARTITIONS)
    try:
        return probe.total()
    finally:
        probe.close()


class NoMirror:
    """The floor's stand-in for a tool (here and in section 9): nothing runs, nothing is sampled."""

    tool = FLOOR

    def start(self) -> None:
        """Nothing to start."""

    def measure(self, scenario: str) -> UsageSampler:
        """A sampler over no process."""
        return UsageSampler(FLOOR, scenario, {}, lambda _name, _process, _root: "").start()

    def alive(self) -> bool:
        """Always: there is nothing to die."""
        return True

    def log_tail(self) -> str:
        """No log."""
        return ""

    def stop(self) -> None:
        """Nothing to stop."""
