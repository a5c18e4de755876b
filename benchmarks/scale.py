"""Section 9: real size. The same tools on 12, 1,000 and 4,000 partitions spread over many topics.

One tool run per shape measures, in order: the catch-up copy of a backlog (start -> first record, start -> every
partition copying, first -> last record, peak memory), then a steady 10k records/s spread over every partition
(latency, CPU, memory), then the same rate on the ten partitions of one topic while every other partition is
idle (does an idle majority slow the busy few?). Every run has fresh source topics, so each copies the same
backlog and nothing another run wrote. Beside them, per repeat and shape, the floor: the same loads with no
replicator, and Kafka's own replica fetcher copying the same backlog to a broker that has none of those partitions
yet (the catch-up a replicator cannot beat: it creates every log as a fresh mirror's target must).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from confluent_kafka import IsolationLevel, KafkaException, TopicPartition
from confluent_kafka.admin import OffsetSpec

from benchmarks.arrivals import Arrivals, record_identity
from benchmarks.console import say
from benchmarks.contenders import MM2, PRODUCER, STRAIT, TOOLS, Mirror, MirrorSetup, open_mirror
from benchmarks.copy_check import HEADER, CopyCheck, check_copy, copy_notes, run_cells
from benchmarks.lab import Lab, RemoteEnds, create_topics, delete_topics, make_ready_topics
from benchmarks.latency import FLOOR, NoMirror
from benchmarks.model import BenchOptions, Section, percentile
from benchmarks.replica_ceiling import ReplicaBench, ReplicaCopy, replica_bench
from benchmarks.tables import median, num
from benchmarks.usage import UsageSampler
from shared.kafka.factories import confluent_admin, confluent_consumer

KEY = "scale"
T = TypeVar("T")
RECORD_SIZE = 1024
RATE = 10_000
BUSY_TOPICS = 1  # the "few busy" case: the partitions of this many topics get the whole load
POLL_S = 0.25
START_TIMEOUT_S = 300
DRAIN_TIMEOUT_S = 60
LATEST = IsolationLevel.READ_UNCOMMITTED  # the log end: both tools write without transactions here


@dataclass(frozen=True)
class Shape:
    """`topics` source topics of `per_topic` partitions, holding `backlog` records of 1 KiB before the tool starts."""

    topics: int
    per_topic: int
    backlog: int

    @property
    def partitions(self) -> int:
        """Partitions mirrored."""
        return self.topics * self.per_topic

    @property
    def label(self) -> str:
        """'1,000 (100 x 10)'."""
        return f"{self.partitions:,} ({self.topics} x {self.per_topic})"


def shapes(quick: bool) -> list[Shape]:
    """Full: 12 partitions (the other sections' shape), 1,000 and 4,000; quick: 12 and 100, small backlogs."""
    if quick:
        return [Shape(1, 12, 12_000), Shape(10, 10, 10_000)]
    return [Shape(1, 12, 200_000), Shape(100, 10, 200_000), Shape(400, 10, 200_000)]


def durations(quick: bool) -> tuple[float, float]:
    """(warm-up, measured window) of each steady load, in seconds."""
    return (3.0, 6.0) if quick else (5.0, 15.0)


@dataclass
class Steady:
    """One steady load: the latencies (ms) of the window's records (each record once) and what the tool cost
    meanwhile."""

    latencies_ms: list[float]
    late: int  # distinct records of the window not on the target when the drain ended
    cpu_cores: float
    rss_mib: float
    duplicates: int = 0  # second copies the measuring consumer read (neither arrivals nor samples)

    def stats(self) -> dict[str, float]:
        """p50, p99, max in ms."""
        samples = self.latencies_ms or [float("nan")]
        return {"p50": percentile(samples, 0.5), "p99": percentile(samples, 0.99), "max": max(samples)}


@dataclass
class ScaleRun:
    """One tool on one shape: seconds from its start to the first record, to every partition, to the last."""

    tool: str
    shape: Shape
    first_s: float
    every_partition_s: float
    last_s: float
    catchup_rss_mib: float
    spread: Steady
    few: Steady | None
    copied: int | None = None  # the catch-up did not end within its deadline: the records copied by then
    target_logs_s: float | None = None  # how long the target took to make the remote topics' logs, before the start
    catchup_pss_mib: float | None = None  # the catch-up's peak PSS (shared pages counted once), beside summed RSS
    check: CopyCheck | None = None  # the verifier on the run's copy (backlog and both loads), the tool stopped

    @property
    def unfinished(self) -> str | None:
        """What an unfinished catch-up copied, in words; None when it finished."""
        if self.copied is None:
            return None
        return f"copied {self.copied:,} of {self.shape.backlog:,} records in {self.last_s:.0f} s"

    @property
    def catchup_rate(self) -> float:
        """Records/s from the first record on the target to the last (to the deadline, when unfinished)."""
        copied = self.shape.backlog if self.copied is None else self.copied
        return copied / max(1e-3, self.last_s - self.first_s)

    def as_dict(self) -> dict[str, Any]:
        """Plain data for the raw samples."""
        few = self.few
        return {
            "tool": self.tool,
            "partitions": self.shape.partitions,
            "first_record_s": round(self.first_s, 2),
            "every_partition_s": round(self.every_partition_s, 2),
            "last_record_s": round(self.last_s, 2),
            "catchup_records_per_s": round(self.catchup_rate),
            "catchup_peak_rss_mib": round(self.catchup_rss_mib),
            "catchup_peak_pss_mib": None if self.catchup_pss_mib is None else round(self.catchup_pss_mib),
            "spread": _steady_dict(self.spread),
            "few_busy": None if few is None else _steady_dict(few),
            "catchup_unfinished": self.unfinished,
            "target_logs_s": None if self.target_logs_s is None else round(self.target_logs_s, 1),
            "verified_copy": None if self.check is None else self.check.as_dict(),
        }


def _steady_dict(steady: Steady) -> dict[str, Any]:
    return {
        **{key: round(value, 1) for key, value in steady.stats().items()},
        "records": len(steady.latencies_ms),
        "late": steady.late,
        "duplicates_read": steady.duplicates,
        "cpu_cores": round(steady.cpu_cores, 3),
        "rss_mib": round(steady.rss_mib),
    }


def run(options: BenchOptions, lab: Lab) -> Section:
    """Per repeat and shape: the two tools, Strait first in odd repeats and MM2 first in even ones (the tool that
    runs second finds the brokers warmer: the order must not favour either), then the floor (the loads with no
    replicator, Kafka's own copy).

    A measurement that fails (a load generator the broker did not answer in time, a tool that exited) is named in
    the notes and the others go on: at 4,000 partitions one slow moment must not cost the section every run."""
    runs: list[ScaleRun] = []
    floors: list[Floor] = []
    failures: list[str] = []
    attempt = partial(attempt_measure, failures)
    warmup_s, window_s = durations(options.quick)
    with replica_bench(options, []) as follower:
        for repeat in range(1, options.repeats + 1):
            for shape in shapes(options.quick):
                if repeat == 1:
                    attempt(f"{shape.partitions:,} partitions, warm-up", repeat, partial(warm_up, lab, shape))
                for tool in TOOLS if repeat % 2 else tuple(reversed(TOOLS)):
                    done = attempt(
                        f"{shape.partitions:,} partitions, {tool}",
                        repeat,
                        partial(measure, lab, tool, shape, warmup_s, window_s),
                    )
                    if done is not None:
                        runs.append(done)
                floor = attempt(
                    f"{shape.partitions:,} partitions, no replicator",
                    repeat,
                    partial(measure_floor, lab, shape, warmup_s, window_s),
                )
                if floor is not None:
                    floor.replica = attempt(
                        f"{shape.partitions:,} partitions, Kafka's own copy",
                        repeat,
                        partial(measure_replica_copy, lab, follower, shape),
                    )
                    floors.append(floor)
    return _section(options, runs, floors, failures)


def warm_up(lab: Lab, shape: Shape) -> None:
    """One unmeasured pass per shape before its first run, with neither tool: the shape's backlog written into
    fresh topics of its size on the source, then on the target, which are then deleted. A fresh lab's brokers
    take a shape's first copy far slower than the next ones, whichever tool runs it (1,000 partitions, this
    machine, one lab each: Strait 16.6k, 40.0k, 69.0k records/s in turn; MM2 then Strait in turn 18.1k, 28.5k,
    22.3k, 73.8k, 25.5k, 64.5k); users' brokers run for months, and the tool that ran first in a repeat paid for the
    lab's start. After this pass Strait's first copy in a new lab ran at 53.8k, its second at 77.5k."""
    topics = [f"scale-warm-up-{index:04d}" for index in range(shape.topics)]
    run_dir = lab.run_dir(f"scale-warm-up-{shape.partitions}")
    say(f"{shape.label} partitions: warm-up, {shape.backlog:,} records into fresh topics on each cluster")
    for admin, bootstrap in ((lab.source_admin(), None), (lab.target_admin(), lab.target.bootstrap_servers)):
        create_topics(admin, topics, shape.per_topic)
        try:
            fill_topics(lab, run_dir, "warm-up", topics, shape.per_topic, backlog_args(shape), bootstrap)
        finally:
            delete_topics(admin, topics)


@dataclass
class Floor:
    """What a replicator that cost nothing would show at one shape: the steady loads read on the source itself,
    and Kafka's replica fetcher copying the same backlog into partitions its broker did not have."""

    shape: Shape
    spread: Steady
    few: Steady | None
    replica: ReplicaCopy | None = None


def attempt_measure(failures: list[str], what: str, repeat: int, body: Callable[[], T]) -> T | None:
    """`body()`, or None with the failure added to `failures` (the notes); the medians come from what finished."""
    try:
        return body()
    except Exception as exc:  # any failure of one measurement: named, and the section goes on
        first_line = " ".join(str(exc).split())[:300]
        failures.append(f"repeat {repeat}, {what}: not measured ({type(exc).__name__}: {first_line})")
        say(f"{what}: not measured: {first_line}")
        return None


def measure_replica_copy(lab: Lab, follower: ReplicaBench, shape: Shape) -> ReplicaCopy:
    """The shape's topics made on the two-broker cluster's leader and filled as the source is; the follower then
    copies every partition (its logs made on the way, as a fresh mirror's remote topics are)."""
    topics = [f"scale-ceiling-{lab.aliases()[0]}-{index:04d}" for index in range(shape.topics)]
    run_dir = lab.run_dir(f"ceiling-scale-{shape.partitions}")
    follower.make_topics(topics, shape.per_topic)
    bootstrap = follower.cluster.bootstrap_servers
    say(f"replica ceiling: {shape.label} partitions: filling {shape.backlog:,} records")
    try:
        fill_topics(lab, run_dir, "fill", topics, shape.per_topic, backlog_args(shape), bootstrap)
        label = f"{shape.partitions:,} partitions"
        return follower.copy_topics(topics, label, shape.backlog, shape.backlog * RECORD_SIZE, START_TIMEOUT_S)
    finally:
        delete_topics(confluent_admin(follower.cluster.client_properties()), topics)


def measure_floor(lab: Lab, shape: Shape, warmup_s: float, window_s: float) -> Floor:
    """The same two loads, producer and consumer, with no replicator: the consumer reads the source topics."""
    source_alias, _target = lab.aliases()
    topics = [f"scale-{source_alias}-{index:04d}" for index in range(shape.topics)]
    same = {topic: topic for topic in topics}
    run_dir = lab.run_dir(f"{source_alias}-floor-scale-{shape.partitions}")
    create_topics(lab.source_admin(), topics, shape.per_topic)
    # The same backlog as the tools' runs first: their loads also write to partitions that already hold records.
    fill_topics(lab, run_dir, "fill", topics, shape.per_topic, backlog_args(shape))
    nothing = NoMirror()
    sampler = nothing.measure("floor")
    try:
        spread = _steady(lab, nothing, sampler, run_dir, "spread", topics, same, shape.per_topic, warmup_s, window_s)
        few = None
        if shape.topics > BUSY_TOPICS:
            busy = topics[:BUSY_TOPICS]
            few = _steady(lab, nothing, sampler, run_dir, "few", busy, same, shape.per_topic, warmup_s, window_s)
    finally:
        sampler.finish()
        delete_topics(lab.source_admin(), topics)
    return Floor(shape, spread, few)


# -- one run ---------------------------------------------------------------------------------------------
def measure(lab: Lab, tool: str, shape: Shape, warmup_s: float, window_s: float) -> ScaleRun:
    """Create and fill fresh source topics, start the tool, time the catch-up, then the two steady loads."""
    source_alias, target_alias = lab.aliases()
    prefix = f"scale-{source_alias}-"
    topics = [f"{prefix}{index:04d}" for index in range(shape.topics)]
    remote = {topic: f"{source_alias}.{topic}" for topic in topics}
    run_dir = lab.run_dir(f"{source_alias}-{tool.lower()}-scale-{shape.partitions}")
    create_topics(lab.source_admin(), topics, shape.per_topic)
    say(f"{tool}: {shape.label} partitions: filling {shape.backlog:,} records")
    fill_topics(lab, run_dir, "fill", topics, shape.per_topic, backlog_args(shape))
    setup = MirrorSetup(source_alias, target_alias, topics=f"{prefix}.*", tasks=lab.options.tasks)
    mirror = open_mirror(tool, setup, lab.source, lab.target, run_dir)
    probe = RemoteEnds(lab.target.client_properties(), list(remote.values()), shape.per_topic)
    logs_s = make_remote_topics(lab, probe, list(remote.values()), shape)
    say(f"{tool}: {shape.label} partitions: the target made the remote topics' logs in {logs_s:.1f} s")
    sampler: UsageSampler | None = None
    say(f"{tool}: {shape.label} partitions: catch-up ({source_alias}->{target_alias})")
    try:
        began = time.monotonic()
        mirror.start()
        sampler = mirror.measure(f"scale {shape.partitions}")
        first_s, every_s, last_s, copied = _catch_up(mirror, probe, shape, began)
        catchup_rss = sampler.usage.peak_total_rss_mib
        catchup_pss = sampler.usage.peak_total_pss_mib
        if copied is not None:
            say(f"{tool}: the catch-up did not finish: {copied:,} of {shape.backlog:,} copied; steady loads run anyway")
        say(f"{tool}: first record {first_s:.1f} s, every partition {every_s:.1f} s, last {last_s:.1f} s")
        spread = _steady(lab, mirror, sampler, run_dir, "spread", topics, remote, shape.per_topic, warmup_s, window_s)
        few = None
        if shape.topics > BUSY_TOPICS:
            busy = topics[:BUSY_TOPICS]
            few = _steady(lab, mirror, sampler, run_dir, "few", busy, remote, shape.per_topic, warmup_s, window_s)
        sampler.finish()
        mirror.stop()
        say(f"{tool}: {shape.label} partitions: verifying the copy")
        check = check_copy(run_dir / "mm2.properties", setup.flow, f"{re.escape(prefix)}.*")
        say(f"{tool}: {check.summary()}")
    finally:
        if sampler is not None:
            sampler.finish()
        probe.close()
        mirror.stop()
        delete_topics(lab.target_admin(), list(remote.values()))
        delete_topics(lab.source_admin(), topics)
    return ScaleRun(tool, shape, first_s, every_s, last_s, catchup_rss, spread, few, copied, logs_s, catchup_pss, check)


def make_remote_topics(lab: Lab, probe: RemoteEnds, remote: list[str], shape: Shape) -> float:
    """Create the remote topics before the tool starts and wait until the target broker made every log (each
    partition answers a ListOffsets); the seconds that took. A fresh target makes thousands of logs one by one
    (8-12 ms each on this machine, slower while a tool starts beside it): left to the tools, that time, not
    theirs, set the catch-up and the time to every partition (4,000 logs took 17-50 s in this machine's runs)."""
    began = time.monotonic()
    make_ready_topics(lab.target, remote, shape.per_topic, ends=probe, timeout_s=START_TIMEOUT_S)
    return time.monotonic() - began


def backlog_args(shape: Shape) -> list[str]:
    """The load generator's arguments for a shape's backlog: keyed, so the verifier tells its records apart (their
    values are all alike)."""
    return ["--records", str(shape.backlog), "--keys"]


def fill_topics(
    lab: Lab,
    run_dir: Path,
    name: str,
    topics: Sequence[str],
    per_topic: int,
    extra: list[str],
    bootstrap: str | None = None,
) -> dict[str, int]:
    """Run the spread load generator to its end (on the source, unless `bootstrap` names another cluster)."""
    listing = run_dir / f"{name}-topics.txt"
    listing.write_text("\n".join(topics) + "\n")
    command = load_command(lab, listing, per_topic, extra, bootstrap)
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"load generator failed ({name}): {done.stderr[-2000:]}")
    counts: dict[str, int] = json.loads(done.stdout.strip().splitlines()[-1])
    return counts


def load_command(lab: Lab, listing: Path, per_topic: int, extra: list[str], bootstrap: str | None = None) -> list[str]:
    settings = [arg for key, value in PRODUCER.items() for arg in ("--producer", f"{key}={value}")]
    return [
        sys.executable,
        "-m",
        "benchmarks.spread_load",
        "--bootstrap",
        bootstrap or lab.source.bootstrap_servers,
        "--topics",
        str(listing),
        "--partitions",
        str(per_topic),
        "--size",
        str(RECORD_SIZE),
        *settings,
        *extra,
    ]


def _catch_up(mirror: Mirror, probe: RemoteEnds, shape: Shape, began: float) -> tuple[float, float, float, int | None]:
    """Seconds from the start to the first record, to every partition holding one, to the last record; and, when
    the deadline passed first, the records copied by then (the run counts with the deadline as its end: one tool
    that stalls on a few records must not cost the section every other run)."""
    first_s = every_s = None
    deadline = began + START_TIMEOUT_S + shape.backlog / 2000
    while True:
        ends = probe.ends()
        now = time.monotonic() - began
        copied = sum(ends.values())
        if copied and first_s is None:
            first_s = now
        if every_s is None and len(ends) == shape.partitions and all(ends.values()):
            every_s = now
        if copied >= shape.backlog and first_s is not None and every_s is not None:
            return first_s, every_s, now, None
        if not mirror.alive():
            raise RuntimeError(f"{mirror.tool} exited during the catch-up; its log ends with:\n{mirror.log_tail()}")
        if time.monotonic() > deadline:
            return (first_s if first_s is not None else now), (every_s if every_s is not None else now), now, copied
        time.sleep(POLL_S)


def _steady(
    lab: Lab,
    mirror: Mirror | NoMirror,
    sampler: UsageSampler,
    run_dir: Path,
    name: str,
    topics: Sequence[str],
    remote: dict[str, str],
    per_topic: int,
    warmup_s: float,
    window_s: float,
) -> Steady:
    """`RATE` records/s over the partitions of `topics` for warm-up + window; latencies of the window's records
    measured on the target by a consumer that starts at the remote topics' ends, each record counted once, until
    every record the load wrote arrived or the drain's deadline passed."""
    keys = [(remote[topic], partition) for topic in topics for partition in range(per_topic)]
    cluster = lab.source if isinstance(mirror, NoMirror) else lab.target
    admin = confluent_admin(cluster.client_properties())
    consumer = confluent_consumer(
        cluster.client_properties(),
        **{"group.id": "strait-bench-scale", "enable.auto.commit": False, "fetch.wait.max.ms": 50},
    )
    consumer.assign([TopicPartition(*key, end) for key, end in _log_ends(admin, keys).items()])
    start_ms = time.time() * 1000 + 1000  # the generator's interpreter starts meanwhile
    window = (start_ms + warmup_s * 1000, start_ms + (warmup_s + window_s) * 1000)
    listing = run_dir / f"{name}-topics.txt"
    listing.write_text("\n".join(topics) + "\n")
    extra = ["--rate", str(RATE), "--seconds", str(warmup_s + window_s + 1), "--window", *map(str, window), "--keys"]
    launched_ms = time.time() * 1000  # every record of this load is stamped later
    generator = subprocess.Popen(
        load_command(lab, listing, per_topic, extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    say(f"{mirror.tool}: {RATE:,} records/s over {len(keys):,} partitions ({name})")
    arrivals = Arrivals(window)
    cpu_start = cpu_end = rss = None
    counts: dict[str, int] | None = None  # the generator's, once it exited: records sent, and sent in the window
    deadline = time.monotonic() + warmup_s + window_s + 120
    try:
        while True:
            messages = consumer.consume(num_messages=2000, timeout=0.05)
            now_ms = time.time() * 1000
            for message in messages:
                stamp = message.timestamp()[1]
                if message.error() or stamp < launched_ms:  # not this load's: a backlog the tool still copies
                    continue
                identity = record_identity(
                    message.topic() or "", message.partition() or 0, message.key(), message.value()
                )
                arrivals.add(identity, stamp, now_ms)
            if cpu_start is None and now_ms >= window[0]:
                cpu_start = sampler.cpu_total()
            if cpu_end is None and now_ms >= window[1]:
                cpu_end, rss = sampler.cpu_total(), sampler.current_rss_mib()
            if counts is None and generator.poll() is not None:
                out, err = generator.communicate()
                if generator.returncode != 0:
                    raise RuntimeError(f"load generator failed: {err[-2000:]}")
                counts = json.loads(out.strip().splitlines()[-1])
                deadline = time.monotonic() + DRAIN_TIMEOUT_S
            if counts is not None and arrivals.complete(counts["sent"]):
                break
            if time.monotonic() > deadline:
                break
            if not mirror.alive():
                raise RuntimeError(f"{mirror.tool} exited under load; its log ends with:\n{mirror.log_tail()}")
    finally:
        if generator.poll() is None:
            generator.kill()
        consumer.close()
    if cpu_start is None or cpu_end is None or rss is None or counts is None:
        raise RuntimeError(f"the {name} load did not run through its window")
    late = arrivals.late(counts["in_window"])
    cpu_cores = (cpu_end - cpu_start) / window_s
    result = Steady(arrivals.latencies_ms, late, cpu_cores, rss, arrivals.duplicates)
    stats = result.stats()
    say(
        f"{mirror.tool}: p50 {stats['p50']:.0f} ms, p99 {stats['p99']:.0f} ms, late {result.late}, "
        f"second copies read {result.duplicates}"
    )
    return result


def _log_ends(admin: Any, keys: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """Each partition's end offset, asked again while a new topic's partitions are not served yet."""
    deadline = time.monotonic() + 60
    while True:
        futures = admin.list_offsets(
            {TopicPartition(*key): OffsetSpec.latest() for key in keys}, isolation_level=LATEST, request_timeout=30
        )
        try:
            # ListOffsetsResultInfo has `offset` at run time; the package's stubs leave it out.
            return {(tp.topic, tp.partition): int(f.result().offset) for tp, f in futures.items()}
        except KafkaException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


# -- the report ------------------------------------------------------------------------------------------
HEADERS = [
    "partitions",
    "tool",
    "catch-up: first → last (records/s)",
    "start → first record (s)",
    "start → every partition copying (s)",
    "peak RSS in the catch-up (MiB)",
    "10k/s over all: p50 / p99 (ms)",
    "steady CPU (cores)",
    "steady RSS (MiB)",
    "10k/s on 10 busy, rest idle: p50 / p99 (ms)",
    "late",
    HEADER,
]


def _section(options: BenchOptions, runs: list[ScaleRun], floors: list[Floor], failures: Sequence[str] = ()) -> Section:
    warmup_s, window_s = durations(options.quick)
    rows: list[list[str]] = []
    notes: list[str] = []
    for shape in shapes(options.quick):
        mine = {tool: [r for r in runs if r.tool == tool and r.shape == shape] for tool in TOOLS}
        for tool in TOOLS:
            if mine[tool]:
                rows.append([shape.label, tool, *_cells(mine[tool])])
        floor = [f for f in floors if f.shape == shape]
        if floor:
            few_floor = [f.few for f in floor if f.few is not None]
            copies = [f.replica for f in floor if f.replica is not None]
            rows.append(
                [
                    shape.label,
                    FLOOR,
                    num(median([c.records_per_s for c in copies])) if copies else "",
                    num(median([c.first_s for c in copies]), 1) if copies else "",
                    "",
                    "",
                    _pair([f.spread for f in floor]),
                    "",
                    "",
                    _pair(few_floor) if few_floor else "-",
                    "",
                    "-",
                ]
            )
        if mine[STRAIT] and mine[MM2]:
            rows.append([shape.label, "Strait ÷ MM2 (medians)", *_ratios(mine[STRAIT], mine[MM2])])
            notes.append(_verdict(shape, mine[STRAIT], mine[MM2]))
        pss = {tool: [r.catchup_pss_mib for r in mine[tool] if r.catchup_pss_mib is not None] for tool in TOOLS}
        if pss[STRAIT] and pss[MM2]:
            notes.append(
                f"{shape.partitions:,} partitions, peak memory counting each shared page once (PSS, summed over the "
                f"processes): Strait {median(pss[STRAIT]):,.0f} MiB, MM2 {median(pss[MM2]):,.0f} MiB (medians; the "
                "table's RSS counts the pages PySpark's workers share with their daemon once per process)"
            )
        made = [run.target_logs_s for tool in TOOLS for run in mine[tool] if run.target_logs_s is not None]
        if made:
            notes.append(
                f"{shape.partitions:,} partitions: before each run the target broker made the remote topics' "
                f"{shape.partitions:,} logs in {min(made):.1f}-{max(made):.1f} s (median {median(made):.1f} s), "
                "with no tool running"
            )
        shortfall = _load_shortfall(shape, mine, durations(options.quick)[1])
        if shortfall:
            notes.append(shortfall)
        if floor:
            notes.append(_added(shape, mine, floor))
            ceiling = _ceiling(shape, mine, floor)
            if ceiling:
                notes.append(ceiling)
        for tool in TOOLS:
            for index, run in enumerate(mine[tool], 1):
                if run.unfinished is not None:
                    notes.append(
                        f"{shape.partitions:,} partitions, {tool} run {index}: the catch-up did not finish "
                        f"({run.unfinished}); its rate counts with the deadline as the end"
                    )
    notes += copy_notes(
        (f"{shape.partitions:,} partitions, {tool} run {index}", run.check)
        for shape in shapes(options.quick)
        for tool in TOOLS
        for index, run in enumerate((r for r in runs if r.tool == tool and r.shape == shape), 1)
    )
    notes += list(failures)
    return Section(
        key=KEY,
        title="9. Real size: 12 to 4,000 partitions",
        method=(
            "Per run fresh source topics of 1 KiB records: one topic of 12 partitions, 100 topics x 10 partitions "
            "or 400 x 10, each holding the same backlog spread evenly over every partition (written by "
            "`benchmarks/spread_load.py`, a Python producer with the tools' producer settings). The remote topics "
            "are made on the target first, with the same partitions, and the tool starts once the target broker "
            "made every log (each partition answers a ListOffsets; the notes give how long that took): a fresh "
            "target makes thousands of logs one by one, and left to the tools that time, the same for both and "
            "17-50 s for 4,000 logs on this machine, set their catch-up. Before a shape's first run, one unmeasured "
            "pass with neither tool writes its backlog into fresh topics of its size on the source and then on the "
            "target (deleted after): a fresh lab's brokers take a shape's first copy far slower than the next ones, "
            "whichever tool runs it, and the tool that ran first would pay for the lab's start. The tool starts "
            "on a fresh flow whose topic regex matches them; the remote topics' end offsets are read every "
            f"{POLL_S:g} s (one batched look-up): *start → first record*, *start → every partition copying* (every "
            "remote partition holds a record) and *first → last* give the catch-up. Then, with the tool still "
            f"running, {RATE:,} records/s are spread round-robin over every partition for {warmup_s:g} s of "
            f"warm-up and {window_s:g} s measured, each record stamped with the producer's wall clock; a consumer "
            "on the target (from the remote ends, in the benchmark process) takes each record's latency as receive "
            "time minus its stamp, as in section 2; *the floor* is the same loads read on the source topics with no "
            "replicator (what the producer, the source broker and the consumer cost); its catch-up cells are Kafka's "
            "replica fetcher copying the same backlog: a two-broker cluster with the lab's broker settings holds it "
            "on broker 1 (made and filled as the source is), broker 2 is added as a replica of every partition in "
            "one request and its logs are watched (as in section 1's replica-fetcher ceiling), so its *start* is "
            "that request and, unlike the tools here, it makes every log it copies into. *Steady CPU* is the tool's "
            "CPU seconds over the measured "
            "window divided by its length (every process: for Strait topic-sync, data-mirror, Spark's JVM and "
            "Python workers); *steady RSS* their summed resident memory at its end. Last, the same rate on the 10 "
            "partitions of one topic while every other partition stays idle. Cells are medians of the runs "
            f"({options.repeats} per tool and shape, Strait and MM2 in turn: Strait first in odd repeats, MM2 in even "
            "ones). The steady loads key each record with its number and the consumer counts each record once (a "
            "second copy, an at-least-once replay, is neither an arrival nor a sample); it drains until every "
            f"record written is on the target, up to {DRAIN_TIMEOUT_S} s after the load stopped, and *late* sums "
            "the window records not on the target by then. After both loads the tool stops and the engine of "
            "`strait verify` compares every source topic with its remote topic record by record (backlog and loads; "
            "the backlog is keyed too): the last column gives, per run, the source records not on the target and "
            "the second copies it holds. The ratio row divides Strait's "
            "median by MM2's: above 1 is better for Strait in the rate column, below 1 in every other."
        ),
        headers=HEADERS,
        rows=rows,
        settings={
            "load": f"{RATE:,} records/s x {RECORD_SIZE} B; backlog per shape: "
            + "; ".join(f"{s.partitions:,} partitions: {s.backlog:,} records" for s in shapes(options.quick)),
            "tools": "as in section 1 (same properties file, tasks.max = Strait's Spark tasks)",
        },
        raw={
            "runs": [r.as_dict() for r in runs],
            "replica_fetcher": [
                {
                    "partitions": f.shape.partitions,
                    "first_byte_s": round(f.replica.first_s, 2),
                    "copied_s": round(f.replica.copied_s, 2),
                    "in_sync_s": round(f.replica.in_sync_s, 2),
                    "records_per_s": round(f.replica.records_per_s),
                }
                for f in floors
                if f.replica is not None
            ],
        },
        notes=notes,
    )


def _load_shortfall(shape: Shape, by_tool: dict[str, list[ScaleRun]], window_s: float) -> str | None:
    """A note when a run's steady load stayed under 95 % of RATE: the source broker took no more beside the tool
    (the load generator's queue then holds records it has stamped, and their latency counts that wait)."""
    reached = {tool: [(len(r.spread.latencies_ms) + r.spread.late) / window_s for r in by_tool[tool]] for tool in TOOLS}
    if all(rate >= 0.95 * RATE for rates in reached.values() for rate in rates):
        return None
    runs = "; ".join(f"{tool} {', '.join(num(rate) for rate in rates)}" for tool, rates in reached.items() if rates)
    return (
        f"{shape.partitions:,} partitions: the load over every partition stayed under {RATE:,} records/s in some "
        f"runs (records stamped in the window per second: {runs}); the source broker took no more beside the tool"
    )


def _cells(runs: list[ScaleRun]) -> list[str]:
    few = [r.few for r in runs if r.few is not None]
    return [
        num(median([r.catchup_rate for r in runs])),
        num(median([r.first_s for r in runs]), 1),
        num(median([r.every_partition_s for r in runs]), 1),
        num(median([r.catchup_rss_mib for r in runs])),
        _pair([r.spread for r in runs]),
        num(median([r.spread.cpu_cores for r in runs]), 2),
        num(median([r.spread.rss_mib for r in runs])),
        _pair(few) if few else "-",
        num(sum(r.spread.late + (r.few.late if r.few else 0) for r in runs)),
        run_cells([r.check for r in runs]),
    ]


def _added(shape: Shape, by_tool: dict[str, list[ScaleRun]], floor: list[Floor]) -> str:
    """Each tool's median latency minus the floor's, at p50 and p99, for both loads."""

    def mark(loads: Sequence[Steady], at: str) -> float:
        return median([load.stats()[at] for load in loads])

    parts = []
    for tool, runs in by_tool.items():
        if not runs:
            continue
        spread = [mark([r.spread for r in runs], at) - mark([f.spread for f in floor], at) for at in ("p50", "p99")]
        text = f"{tool} adds {spread[0]:,.0f} / {spread[1]:,.0f} ms (p50 / p99) over all partitions"
        few, few_floor = [r.few for r in runs if r.few], [f.few for f in floor if f.few]
        if few and few_floor:
            busy = [mark(few, at) - mark(few_floor, at) for at in ("p50", "p99")]
            text += f", {busy[0]:,.0f} / {busy[1]:,.0f} ms on the 10 busy"
        parts.append(text)
    return f"{shape.partitions:,} partitions, latency over the floor: " + "; ".join(parts) + "."


def _ceiling(shape: Shape, by_tool: dict[str, list[ScaleRun]], floor: list[Floor]) -> str | None:
    """Each tool's catch-up as a share of Kafka's own copy of the backlog (a reference, not a hard ceiling: a
    follower fetches with one thread and small answers, see section 1), and where 2x MM2 lies against it."""
    copies = [f.replica for f in floor if f.replica is not None]
    if not copies:
        return None
    ceiling = median([c.records_per_s for c in copies])
    text = (
        f"{shape.partitions:,} partitions, Kafka's own copy: its replica fetcher (default settings) copied the "
        f"backlog at {ceiling:,.0f} records/s"
    )
    shares = [
        f"{tool}'s median is {median([r.catchup_rate for r in runs]) / ceiling:.0%} of it"
        for tool, runs in by_tool.items()
        if runs
    ]
    if shares:
        text += " (" + ", ".join(shares) + ")"
    if by_tool.get(MM2):
        twice = 2 * median([r.catchup_rate for r in by_tool[MM2]])
        where = "below" if twice <= ceiling else "above"
        text += f"; twice MM2's catch-up, {twice:,.0f} records/s, is {where} what Kafka's own copy reached"
    return text + "."


def _pair(loads: Sequence[Steady]) -> str:
    stats = [load.stats() for load in loads]
    return f"{num(median([s['p50'] for s in stats]))} / {num(median([s['p99'] for s in stats]))}"


def _ratios(strait: list[ScaleRun], mm2: list[ScaleRun]) -> list[str]:
    def of(pick: Any) -> str:
        mine, theirs = median([pick(r) for r in strait]), median([pick(r) for r in mm2])
        return f"{mine / theirs:.2f}x" if theirs else "n/a"

    def latency(get: Any, mark: str) -> str:
        runs_s, runs_m = [get(r) for r in strait], [get(r) for r in mm2]
        if any(x is None for x in runs_s + runs_m):
            return "-"
        mine = median([x.stats()[mark] for x in runs_s])
        theirs = median([x.stats()[mark] for x in runs_m])
        return f"{mine / theirs:.2f}x" if theirs else "n/a"

    spread, few = (lambda r: r.spread), (lambda r: r.few)
    return [
        of(lambda r: r.catchup_rate),
        of(lambda r: r.first_s),
        of(lambda r: r.every_partition_s),
        of(lambda r: r.catchup_rss_mib),
        f"{latency(spread, 'p50')} / {latency(spread, 'p99')}",
        of(lambda r: r.spread.cpu_cores),
        of(lambda r: r.spread.rss_mib),
        f"{latency(few, 'p50')} / {latency(few, 'p99')}",
        "",
        "",
    ]


def _figure(value: float) -> str:
    """A measured figure as the table shows it: whole numbers from 100 up, two decimals below."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.2f}"


def _verdict(shape: Shape, strait: list[ScaleRun], mm2: list[ScaleRun]) -> str:
    """Each goal of the scale issue at this shape, met or not, with the medians it was read from."""

    def med(runs: list[ScaleRun], pick: Any) -> float:
        return median([pick(r) for r in runs])

    checks = [
        (
            "latency p50 ≤ MM2's",
            med(strait, lambda r: r.spread.stats()["p50"]),
            med(mm2, lambda r: r.spread.stats()["p50"]),
            1.0,
            False,
        ),
        (
            "latency p99 ≤ MM2's",
            med(strait, lambda r: r.spread.stats()["p99"]),
            med(mm2, lambda r: r.spread.stats()["p99"]),
            1.0,
            False,
        ),
        ("catch-up ≥ 2x MM2's", med(strait, lambda r: r.catchup_rate), med(mm2, lambda r: r.catchup_rate), 2.0, True),
        ("start → first record ≤ MM2's", med(strait, lambda r: r.first_s), med(mm2, lambda r: r.first_s), 1.0, False),
        (
            "peak RSS ≤ MM2's",
            med(strait, lambda r: r.catchup_rss_mib),
            med(mm2, lambda r: r.catchup_rss_mib),
            1.0,
            False,
        ),
        (
            "steady CPU ≤ MM2's",
            med(strait, lambda r: r.spread.cpu_cores),
            med(mm2, lambda r: r.spread.cpu_cores),
            1.0,
            False,
        ),
    ]
    parts = []
    for name, mine, theirs, factor, higher in checks:
        met = mine >= factor * theirs if higher else mine <= factor * theirs
        parts.append(f"{name}: {'met' if met else 'NOT met'} ({_figure(mine)} vs {_figure(theirs)})")
    return f"{shape.partitions:,} partitions: " + "; ".join(parts) + "."
