"""Section 4: failover precision. Groups at chosen positions on A; how many records each would re-read (duplicates)
or skip (losses) on B after translation with MM2's checkpoints and with Strait's."""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from confluent_kafka import KafkaException

from benchmarks.checkpoint_reader import GroupCheckpoints, latest_checkpoints
from benchmarks.cluster_pair import cluster_pair
from benchmarks.mm2_translate import translate_groups
from benchmarks.model import BenchOptions, Section
from benchmarks.positions import KINDS, Position, choose_positions
from benchmarks.precision_data import commit_positions, offset_sync_counts, produce_numbered, remote_partitions
from benchmarks.resume_error import RemotePartition, ResumeError, Tally, resume_error
from benchmarks.section_text import run_standalone
from benchmarks.strait_processes import StraitProcesses
from benchmarks.translator_process import start_translator, wait_ready
from shared.errors import StraitError
from shared.kafka.end_offsets import topic_end_offsets
from shared.localkafka import KafkaCluster
from shared.localkafka.mirror_maker import MirrorMakerProcess, write_properties
from tests.support.mm2_config import SINGLE_BROKER_DEFAULTS, write_mm2_config

CHECKPOINTS_TOPIC = "A.checkpoints.internal"
OFFSET_SYNCS_TOPIC = "mm2-offset-syncs.B.internal"  # on A (offset-syncs.topic.location=source, the default)
OFFSET_LAG_MAX = 100  # MM2's default, left as it is for both tools
SEED = 4242
# Translation answers: (group, source partition) -> target offset, or absent when there is none.
Answers = dict[tuple[str, int], int]


@dataclass(frozen=True)
class Sizes:
    """How big the run is."""

    groups: int
    partitions: int
    records: int  # per partition
    settle_s: float  # checkpoints unchanged this long (with everything mirrored) counts as final
    timeout_s: float  # per tool, for checkpoints to settle once everything was mirrored


FULL = Sizes(groups=20, partitions=12, records=2000, settle_s=12, timeout_s=120)
QUICK = Sizes(groups=5, partitions=12, records=500, settle_s=8, timeout_s=90)
MIRROR_TIMEOUT_S = 400  # start-up included: Spark and Connect start slowly on a busy 2-core machine


@dataclass
class ToolRun:
    """What one replicator left behind for its groups."""

    topic: str
    groups: list[str]
    positions: list[Position]
    settled: bool = False
    mirror_s: float = 0.0  # from start until every record was on the target
    settle_s: float = 0.0  # from then until the checkpoints stopped changing


def mm2_properties(
    a: KafkaCluster, b: KafkaCluster, topic: str, groups: str, tasks: int, *, checkpoint_interval_s: int = 1
) -> dict[str, str]:
    """A dedicated-mode MM2 config for A->B with checkpoints every `checkpoint_interval_s` and group offset sync
    off."""
    props = {"clusters": "A, B"}
    for alias, cluster in (("A", a), ("B", b)):
        props |= {f"{alias}.{key}": value for key, value in cluster.client_properties().items()}
    props |= {
        "A->B.enabled": "true",
        "B->A.enabled": "false",
        "A->B.topics": topic,
        "A->B.groups": groups,
        "A->B.tasks.max": str(tasks),
        "A->B.emit.checkpoints.enabled": "true",
        "A->B.emit.checkpoints.interval.seconds": str(checkpoint_interval_s),
        "A->B.sync.group.offsets.enabled": "false",
        "A->B.refresh.groups.interval.seconds": "5",
        "A->B.refresh.topics.interval.seconds": "5",
        "emit.heartbeats.enabled": "false",
        "sync.topic.acls.enabled": "false",
        # Delayed offset syncs (the last record of a burst) reach the topic at each offset commit; 5 s instead of
        # the 60 s default only lets MM2 reach its most precise checkpoints sooner.
        "B.offset.flush.interval.ms": "5000",
        "config.storage.replication.factor": "1",
        "offset.storage.replication.factor": "1",
        "status.storage.replication.factor": "1",
        **SINGLE_BROKER_DEFAULTS,
    }
    return props


def _await_checkpoints(
    b: KafkaCluster, remote_topic: str, groups: Sequence[str], sizes: Sizes, alive: Callable[[], str | None]
) -> tuple[bool, float, float]:
    """Wait until the remote topic holds every record, then until the groups' checkpoints stop changing.

    Final when unchanged for `settle_s` with a checkpoint for every group-partition, or for 3x `settle_s` without
    (a tool may never checkpoint some partitions). Returns whether they settled, seconds until everything was
    mirrored (start-up included) and seconds from then until settled.
    """
    started = time.monotonic()
    expected = sizes.partitions * sizes.records
    props = b.client_properties()
    mirrored_at: float | None = None
    last: GroupCheckpoints | None = None
    changed_at = started
    while True:
        failure = alive()
        if failure:
            raise RuntimeError(failure)
        now = time.monotonic()
        if mirrored_at is None and now - started > MIRROR_TIMEOUT_S:
            raise RuntimeError(f"{remote_topic} not fully mirrored within {MIRROR_TIMEOUT_S} s")
        try:
            if mirrored_at is None and (topic_end_offsets(props, [remote_topic])[remote_topic] or 0) >= expected:
                mirrored_at = now
            snapshot = latest_checkpoints(props, CHECKPOINTS_TOPIC, groups)
        except (StraitError, KafkaException, AssertionError):  # a topic still electing its leader: ask again
            time.sleep(2)
            continue
        now = time.monotonic()
        if snapshot != last:
            last, changed_at = snapshot, now
        if mirrored_at is not None:
            complete = all(len(snapshot.get(group, {})) == sizes.partitions for group in groups)
            if now - changed_at >= (sizes.settle_s if complete else 3 * sizes.settle_s):
                return True, mirrored_at - started, now - mirrored_at
            if now - mirrored_at > sizes.timeout_s:
                return False, mirrored_at - started, now - mirrored_at
        time.sleep(2)


def _run_mm2(a: KafkaCluster, b: KafkaCluster, run: ToolRun, sizes: Sizes, workdir: Path, tasks: int) -> None:
    """Mirror `run.topic` with MM2 until its checkpoints for the groups settle; MM2 is stopped afterwards."""
    config = write_properties(workdir / "mm2.properties", mm2_properties(a, b, run.topic, f"{run.topic}-g.*", tasks))
    mm2 = MirrorMakerProcess(config, log_path=workdir / "logs" / "mm2.log")
    try:
        mm2.start()

        def alive() -> str | None:
            return None if mm2.is_running() else f"MirrorMaker 2 exited: {mm2.log_tail()}"

        run.settled, run.mirror_s, run.settle_s = _await_checkpoints(b, f"A.{run.topic}", run.groups, sizes, alive)
    finally:
        mm2.stop()


def _run_strait(
    a: KafkaCluster, b: KafkaCluster, run: ToolRun, sizes: Sizes, workdir: Path, tasks: int
) -> tuple[Answers, Answers]:
    """Mirror `run.topic` with Strait's services as processes until its checkpoints settle; then ask the
    translator over HTTP: returns its answers per group (GET /offsets) and per partition (GET /translate)."""
    flow = {
        "topics": run.topic,
        "groups": f"{run.topic}-g.*",
        "emit.checkpoints.interval.seconds": "1",
        "sync.group.offsets.enabled": "false",
        "refresh.groups.interval.seconds": "5",
        "refresh.topics.interval.seconds": "5",
        "emit.heartbeats.enabled": "false",
        "sync.topic.acls.enabled": "false",
    }
    config = write_mm2_config(workdir / "strait.properties", {"A": a, "B": b}, {"A->B": flow})
    logs = workdir / "logs"
    with StraitProcesses(config, logs, tasks) as strait:
        translator, base_url = start_translator(config, logs)
        strait.add(translator)
        run.settled, run.mirror_s, run.settle_s = _await_checkpoints(
            b, f"A.{run.topic}", run.groups, sizes, strait.alive
        )
        wait_ready(translator, base_url)
        by_group, by_partition = _ask_translator(base_url, run, sizes)
    return by_group, by_partition


def _ask_translator(base_url: str, run: ToolRun, sizes: Sizes) -> tuple[Answers, Answers]:
    """GET /v1/flows/A/B/offsets for each group (until it lists every partition, bounded) and
    GET /v1/flows/A/B/translate for each group-partition's committed source offset."""
    remote = f"A.{run.topic}"
    by_group: Answers = {}
    by_partition: Answers = {}
    with httpx.Client(base_url=f"{base_url}/v1/flows/A/B", timeout=10) as client:
        for group in run.groups:
            deadline = time.monotonic() + 30
            while True:
                answer = client.get("/offsets", params={"group": group})
                offsets = answer.json().get("offsets", []) if answer.status_code == 200 else []
                if len(offsets) >= sizes.partitions or time.monotonic() > deadline:
                    break
                time.sleep(1)
            for entry in offsets:
                if entry["topic"] == remote:
                    by_group[(group, entry["partition"])] = entry["offset"]
        for position in run.positions:
            params: dict[str, str | int] = {
                "topic": run.topic,
                "partition": position.partition,
                "offset": position.offset,
            }
            answer = client.get("/translate", params=params)
            if answer.status_code == 200:
                by_partition[(position.group, position.partition)] = answer.json()["downstream_offset"]
    return by_group, by_partition


def _from_checkpoints(checkpoints: Mapping[str, Mapping[tuple[str, int], int]], remote_topic: str) -> Answers:
    """Checkpoints of one remote topic as answers keyed by (group, partition)."""
    return {
        (group, partition): offset
        for group, offsets in checkpoints.items()
        for (topic, partition), offset in offsets.items()
        if topic == remote_topic
    }


def _errors(
    positions: Sequence[Position], answers: Answers, remote: Mapping[int, RemotePartition]
) -> list[ResumeError]:
    return [resume_error(p, answers.get((p.group, p.partition)), remote[p.partition]) for p in positions]


def _row(tool: str, via: str, tally: Tally) -> list[str]:
    return [
        tool,
        via,
        str(len(tally.groups)),
        str(tally.partitions),
        str(tally.exact),
        str(tally.duplicates),
        str(tally.losses),
        str(tally.max_error),
        str(tally.untranslated),
    ]


def _by_kind(tally: Tally) -> str:
    parts = []
    for kind in KINDS:
        extra = [
            f"{tally.losses_by_kind[kind]} lost" if tally.losses_by_kind[kind] else "",
            f"{tally.untranslated_by_kind[kind]} without checkpoint" if tally.untranslated_by_kind[kind] else "",
        ]
        detail = ", ".join(part for part in extra if part)
        parts.append(f"{kind} {tally.duplicates_by_kind[kind]}" + (f" ({detail})" if detail else ""))
    return ", ".join(parts)


def run(options: BenchOptions) -> Section:
    """Run MM2 and then Strait on fresh topics of the same two clusters and compare their failover offsets."""
    sizes = QUICK if options.quick else FULL
    workdir = options.workdir / "failover-precision"
    workdir.mkdir(parents=True, exist_ok=True)
    prefix = f"fp-{uuid.uuid4().hex[:6]}"
    with cluster_pair() as (a, b):
        a_props, b_props = a.client_properties(), b.client_properties()
        rng = random.Random(SEED)
        slots = [f"g{i:02d}" for i in range(sizes.groups)]
        layout = choose_positions(slots, sizes.partitions, sizes.records, rng, lag_max=OFFSET_LAG_MAX)
        runs: dict[str, ToolRun] = {}
        for tool in ("mm2", "strait"):
            topic = f"{prefix}-{tool}"
            positions = [Position(f"{topic}-{p.group}", p.partition, p.offset, p.kind) for p in layout]
            produce_numbered(a_props, topic, sizes.partitions, sizes.records)
            commit_positions(a_props, topic, positions)
            runs[tool] = ToolRun(topic, [f"{topic}-{slot}" for slot in slots], positions)
        _run_mm2(a, b, runs["mm2"], sizes, workdir, options.tasks)
        by_group, by_partition = _run_strait(a, b, runs["strait"], sizes, workdir, options.tasks)
        remote = {
            tool: remote_partitions(a_props, tool_run.topic, b_props, f"A.{tool_run.topic}")
            for tool, tool_run in runs.items()
        }
        all_groups = [*runs["mm2"].groups, *runs["strait"].groups]
        b_client = {"bootstrap.servers": b.bootstrap_servers}
        mm2_answers = translate_groups(b_client, "A", all_groups, workdir / "mm2-client")
        final_checkpoints = latest_checkpoints(b_props, CHECKPOINTS_TOPIC, all_groups)
        syncs = offset_sync_counts(a_props, OFFSET_SYNCS_TOPIC, [tool_run.topic for tool_run in runs.values()])
    library: dict[str, Answers] = {tool: {} for tool in runs}
    for answer in mm2_answers:
        tool = "mm2" if answer.group in runs["mm2"].groups else "strait"
        library[tool] |= _from_checkpoints({answer.group: answer.offsets}, f"A.{runs[tool].topic}")
    measured = [
        ("MirrorMaker 2", "checkpoints, RemoteClusterUtils.translateOffsets", "mm2", library["mm2"]),
        ("Strait", "checkpoints, RemoteClusterUtils.translateOffsets", "strait", library["strait"]),
        ("Strait", "translator GET /v1/flows/A/B/offsets (per group)", "strait", by_group),
        ("Strait", "translator GET /v1/flows/A/B/translate (per partition)", "strait", by_partition),
    ]
    rows: list[list[str]] = []
    raw: dict[str, Any] = {"seed": SEED, "tools": {}}
    notes: list[str] = []
    for label, via, tool, answers in measured:
        errors = _errors(runs[tool].positions, answers, remote[tool])
        tally = Tally.of(errors)
        rows.append(_row(label, via, tally))
        notes.append(f"{label}, {via}: duplicates by position kind: {_by_kind(tally)}.")
        raw["tools"][f"{label} / {via}"] = [
            {
                "group": e.position.group,
                "partition": e.position.partition,
                "kind": e.position.kind,
                "source_offset": e.position.offset,
                "translated": e.translated,
                "exact": e.exact,
                "duplicates": e.duplicates,
                "losses": e.losses,
            }
            for e in errors
        ]
    notes.append(
        f"Offset syncs written for the {sizes.partitions * sizes.records} records: MM2 {syncs[runs['mm2'].topic]}, "
        f"Strait {syncs[runs['strait'].topic]}. MM2's translation steps back to the newest sync at or below the "
        "position (its store keeps syncs spaced more widely the older they are), Strait's is exact between two syncs "
        "of one gap-free run. Which records MM2 syncs depends on how its batches fall, so its figures vary a little "
        "from run to run."
    )
    for tool, tool_run in runs.items():
        direct = _from_checkpoints(final_checkpoints, f"A.{tool_run.topic}")
        raw[tool] = {
            "mirror_s": round(tool_run.mirror_s, 1),
            "settle_s": round(tool_run.settle_s, 1),
            "settled": tool_run.settled,
            "offset_syncs_written": syncs[tool_run.topic],
            "codec_read_agrees_with_RemoteClusterUtils": direct == library[tool],
        }
        if not tool_run.settled:
            notes.append(
                f"{tool}: checkpoints still changed {sizes.timeout_s:.0f} s after everything was mirrored; "
                "measured as they were then."
            )
        if direct != library[tool]:
            notes.append(f"{tool}: the checkpoints topic read with Strait's codec disagrees with RemoteClusterUtils.")
    return Section(
        key="failover",
        title="Failover precision",
        method=(
            f"Two single-broker clusters A and B. A topic of {sizes.partitions} partitions x {sizes.records} records "
            "(unique values) per tool on A; "
            f"{sizes.groups} consumer groups per tool committed at the same positions on A: per partition one of "
            "0, early (first 10%), anywhere in the middle, within offset.lag.max of the end, or the end. "
            "MirrorMaker 2 (dedicated mode, same Kafka release) mirrors its topic A->B with checkpoints every 1 s "
            "and sync.group.offsets off; then Strait's topic-sync, data-mirror, checkpoint and offset-translator run "
            "as processes on the other topic with the same settings. Once the remote topic held every record and the "
            f"groups' checkpoints were unchanged for {sizes.settle_s:.0f} s, the tools were stopped and each group's "
            "resume offsets on B were read: with MM2's own RemoteClusterUtils.translateOffsets (both tools write "
            "MM2-format checkpoints), and for Strait also over the translator's HTTP API. The exact resume point of "
            "source offset p is the target offset of the first mirrored record with source offset >= p (the remote "
            "topic is read back and matched by value). Duplicates = records the group would read again (translated "
            "offset below the exact one), losses = records it would skip (above); max error is per group-partition; "
            "a partition without checkpoint falls back to the group's auto.offset.reset on B. "
            "Each tool runs once per benchmark run, with positions from a fixed seed."
        ),
        headers=[
            "tool",
            "resume offsets read via",
            "groups",
            "group-partitions",
            "exact",
            "duplicates",
            "losses",
            "max error per partition",
            "no checkpoint",
        ],
        rows=rows,
        settings={
            "records per partition": str(sizes.records),
            "partitions": str(sizes.partitions),
            "groups per tool": str(sizes.groups),
            "offset.lag.max": str(OFFSET_LAG_MAX),
            "emit.checkpoints.interval.seconds": "1",
            "sync.group.offsets.enabled": "false",
            "MM2 B.offset.flush.interval.ms": "5000 (default 60000)",
            "tasks (MM2 tasks.max, Strait Spark tasks)": str(options.tasks),
            "position seed": str(SEED),
        },
        raw=raw,
        notes=notes,
    )


def main() -> None:
    """Run the section standalone (small sizes unless --full) and print it."""
    run_standalone(run, __doc__)


if __name__ == "__main__":
    main()
