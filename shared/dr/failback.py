"""`strait failback --flow A->B`: bring a failed-over flow back once its old source (A) answers again.

The reverse flow (B->A, configured beside A->B) has copied what the applications wrote on B since the failover to A
(never anything A has: names or provenance headers keep A's own records out). A planned failback waits for it as a
planned failover waits for A->B: producers on B quiet, B->A's copy and checkpoints drained. Then every group moves
back to A: where it read a topic copied from A, at the source offset its position maps back to through A->B's
offset syncs (the reverse translation MM2 lacks), anchored at each partition's failover point; where it read B's own
records, at B->A's checkpoint. A's un-mirrored tail (records A holds past the failover point, which B never had) is
reported by offset and delivered to the groups or skipped for them, and never deleted. Last, A->B becomes active
again: its data-mirror resumes at its committed position, so the tail reaches B too.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import structlog

from shared.config import FlowConfig
from shared.dr.drain import Drain, drain_copy_and_checkpoints
from shared.dr.failover import DrRefused, group_pattern, new_report_id, quiet_producers, reachable, selected
from shared.dr.flow_reads import FlowReads, GroupCheckpoints, provenance_at, read_timeout
from shared.dr.group_moves import GroupMover, GroupTarget, Position
from shared.dr.positions import TailChoice, back_to_source
from shared.dr.records import DrReport, FlowDrState, PartitionPoint, TailRange
from shared.dr.store import DrStore
from shared.errors import CodecError
from shared.filters import DefaultGroupFilter
from shared.kafka.end_offsets import listed_watermarks
from shared.kafka.group_offsets import CommittedOffset, GroupAdmin
from shared.kafka.partition_reader import each_record
from shared.offset_sync_store import OffsetSyncStore
from shared.partition_key import PartitionKey
from shared.records.provenance import Provenance, provenance_of

_log = structlog.get_logger("dr")


@dataclass(frozen=True)
class FailbackOptions:
    """What the operator asked for."""

    tail: TailChoice = "deliver"
    dry_run: bool = False
    timeout_s: float = 120.0
    groups: str | None = None
    ignore_producers: bool = False
    producers_quiet_s: float = 30.0
    allow_rewind: bool = False
    by: str = ""


@dataclass
class _Tail:
    """A's records past each failover point: the ranges that are A's own, and how many came back from B."""

    ranges: dict[PartitionKey, list[tuple[int, int]]]
    ends: dict[PartitionKey, int]  # where A's own records past the point end (the skip position)
    copied_back: int
    starts: dict[PartitionKey, int]  # each partition's log start on A: no group is placed before it


def point_key(point: PartitionPoint) -> PartitionKey:
    return (point.topic, point.partition)


def _own_runs(records: list[tuple[int, bool]]) -> list[tuple[int, int]]:
    """[first, end) runs of the offsets whose flag is set (A's own records), in offset order."""
    runs: list[tuple[int, int]] = []
    for offset, own in records:
        if not own:
            continue
        if runs and runs[-1][1] == offset:
            runs[-1] = (runs[-1][0], offset + 1)
        else:
            runs.append((offset, offset + 1))
    return runs


def _came_from(headers: Sequence[tuple[str, bytes | None]], cluster: str) -> bool:
    """True when the record's provenance header says it was first written on `cluster`."""
    raw = provenance_of(headers)
    if raw is None:
        return False
    try:
        return Provenance.decode(raw).cluster == cluster
    except CodecError:
        return False


def _tail(reads: FlowReads, points: list[PartitionPoint], shared_names: bool, other: str, timeout_s: float) -> _Tail:
    """A's records past each failover point. Under one name on both sides (IdentityReplicationPolicy) B->A's copies
    land in the same partitions: each record is read (within `timeout_s`, keeping only its offset and whether it is
    A's own) and told apart by its provenance; otherwise all are A's."""
    keys = [(p.topic, p.partition) for p in points]
    marks = reads.source_marks(keys)
    ranges: dict[PartitionKey, list[tuple[int, int]]] = {}
    ends: dict[PartitionKey, int] = {}
    copied_back = 0
    for point in points:
        key = (point.topic, point.partition)
        end = marks.get(key, (0, point.source_offset))[1]
        if end <= point.source_offset:
            ends[key] = point.source_offset
            continue
        if not shared_names:
            ranges[key] = [(point.source_offset, end)]
            ends[key] = end
            continue
        flagged = [
            (record.offset, not _came_from(record.headers, other))
            for _, record in each_record(
                reads.flow.source_consumer_props(), point.topic, {point.partition: (point.source_offset, end)},
                timeout_s=timeout_s,
            )
        ]  # fmt: skip
        copied_back += sum(1 for _, own in flagged if not own)
        runs = _own_runs(flagged)
        if runs:
            ranges[key] = runs
        ends[key] = runs[-1][1] if runs else point.source_offset
    return _Tail(ranges, ends, copied_back, {key: start for key, (start, _end) in marks.items()})


def _back_positions(
    group: str,
    commits: dict[PartitionKey, CommittedOffset],
    points: dict[PartitionKey, PartitionPoint],
    syncs: OffsetSyncStore,
    reverse_checkpoints: GroupCheckpoints,
    reverse_reads: FlowReads,
    tail: _Tail,
    options: FailbackOptions,
    source: str,
) -> tuple[GroupTarget, list[str]]:
    """The group's positions on A from its commits on B: back through A->B's syncs for what was copied from A, B->A's
    checkpoints for B's own records; under one name on both sides the record at the position tells which."""
    target = GroupTarget(group)
    notes: list[str] = []
    reverse_topics = reverse_reads.context.topics
    mine = reverse_checkpoints.get(group, {})
    for (topic, partition), committed in sorted(commits.items()):
        point = points.get((topic, partition))
        forward = None
        if reverse_topics.should_replicate(topic):
            forward = mine.get((reverse_topics.remote_topic(topic), partition))
        origin: Provenance | None = None
        if point is not None and forward is not None and committed.offset < point.target_offset:
            found = provenance_at(
                reverse_reads.flow.source_consumer_props(), topic, {partition: committed.offset},
                timeout_s=reverse_reads.timeout_s,
            )  # fmt: skip
            origin = found.get(partition)
        if point is not None and (forward is None or (origin is not None and origin.cluster == source)):
            key = (point.topic, point.partition)
            if origin is not None:
                offset, how = origin.offset, "provenance"
            else:
                offset, how = back_to_source(
                    syncs, point, committed.offset, tail=options.tail, tail_end=tail.ends.get(key, point.source_offset),
                    log_start=tail.starts.get(key, 0),
                )  # fmt: skip
                if how == "log-start":
                    notes.append(f"group {group} {point.topic}-{partition}: its position is gone on {source}")
            target.positions[key] = Position(offset, how, committed.metadata)
        elif forward is not None:
            key = (forward.topic, forward.partition)
            offset, how = forward.downstream_offset, "checkpoint"
            delivering = point is not None and options.tail == "deliver" and bool(tail.ranges.get(point_key(point)))
            if point is not None and delivering and point.source_offset < offset:
                notes.append(
                    f"group {group} {forward.topic}-{partition}: delivering A's tail from {point.source_offset} "
                    f"also reads again {offset - point.source_offset} offsets it read on the other side"
                )
                offset, how = point.source_offset, "tail"
            target.positions[key] = Position(offset, how, committed.metadata)
    return target, notes


def fail_back(flow: FlowConfig, reverse: FlowConfig | None, options: FailbackOptions) -> DrReport:
    """Run (or, with `dry_run`, plan) the failback of `flow` (A->B) through `reverse` (B->A); DrRefused when not."""
    started = int(time.time() * 1000)
    store = DrStore(flow)
    view = store.read()
    state = view.states.get(flow.name)
    if state is None or not state.stopped:
        raise DrRefused(f"{flow.name} is not failed over: nothing to fail back")
    failover = view.reports.get((flow.name, state.report_id or ""))
    if failover is None:
        raise DrRefused(
            f"the report of {flow.name}'s failover ({state.report_id}) is not on {flow.target}: run `strait failover "
            f"--flow {flow.name}` again to finish it, then fail back"
        )
    if reverse is None:
        raise DrRefused(
            f"failing back needs the reverse flow {flow.target}->{flow.source} configured "
            f"({flow.target}->{flow.source}.enabled=true): it copies what was written on {flow.target} to {flow.source}"
        )
    if (down := reachable(flow.source_admin_props())) is not None:
        raise DrRefused(f"{flow.source} must answer to fail back: {down}")
    reverse_state = DrStore(reverse).state()
    if reverse_state is not None and reverse_state.stopped:
        raise DrRefused(f"{reverse.name} is failed over itself (report {reverse_state.report_id})")
    bound = read_timeout(options.timeout_s)
    reads, reverse_reads = FlowReads(flow, timeout_s=bound), FlowReads(reverse, timeout_s=bound)
    pattern = group_pattern(options.groups)
    group_filter = DefaultGroupFilter(reverse.settings.groups, reverse.settings.groups_exclude)
    partitions = reverse_reads.source_partitions()
    producers, producer_notes = quiet_producers(
        reverse_reads, partitions, options.producers_quiet_s, started, ignore=options.ignore_producers
    )
    drained = drain_copy_and_checkpoints(
        Drain(reverse_reads, partitions, lambda group: selected(group, pattern, group_filter)),
        timeout_s=options.timeout_s,
    )
    if drained.problem is not None:
        raise DrRefused(f"{reverse.name} not drained within {options.timeout_s:.0f}s: {drained.problem}")
    shared_names = reads.context.topics.policy.format_remote_topic("x", "t") == "t"
    tail = _tail(reads, failover.points, shared_names, flow.target, options.timeout_s)
    copied_back = tail.copied_back if shared_names else _records_on(reverse_reads)
    syncs = reads.syncs()
    reverse_checkpoints = reverse_reads.checkpoints()
    points = {(p.remote_topic, p.partition): p for p in failover.points}
    admin = GroupAdmin.connect(flow.target, flow.target_admin_props(), timeout_s=reads.timeout_s)
    groups = [g for g in admin.list_groups().states if selected(g, pattern, group_filter)]
    commits, errors = admin.committed_offsets(groups) if groups else ({}, {})
    targets = []
    notes = producer_notes + [f"could not read group {g} on {flow.target}: {e}" for g, e in sorted(errors.items())]
    for group, offsets in sorted(commits.items()):
        target, said = _back_positions(
            group, offsets, points, syncs, reverse_checkpoints, reverse_reads, tail, options, flow.source
        )
        targets.append(target)
        notes += said
    moved, skipped = GroupMover(flow.source, flow.source_admin_props()).move(
        targets, dry_run=options.dry_run, allow_rewind=options.allow_rewind
    )
    report_id = new_report_id(started)
    report = DrReport(
        flow=flow.name,
        id=report_id,
        kind="failback",
        planned=True,
        dry_run=options.dry_run,
        by=options.by,
        started_ms=started,
        ended_ms=int(time.time() * 1000),
        points=failover.points,
        producers=producers,
        groups_moved=moved,
        groups_skipped=skipped,
        tail=[
            TailRange(topic=key[0], partition=key[1], first=first, end=end, records=end - first, choice=options.tail)
            for key, runs in sorted(tail.ranges.items())
            for first, end in runs
        ],
        copied_back=copied_back,
        notes=notes,
    )
    if not options.dry_run:
        store.write(
            report, FlowDrState(flow=flow.name, state="active", action="failback", report_id=report_id, by=options.by)
        )
        _log.warning("flow_failed_back", flow=flow.name, report=report_id, by=options.by, tail=options.tail)
        for move in moved:
            changed = [
                (p.topic, p.partition, p.previous_offset, p.offset) for p in move.partitions if p.action == "set"
            ]
            _log.info(
                "group_failed_back", flow=flow.name, group=move.group, by=options.by, report=report_id, changes=changed
            )
    return report


def _records_on(reverse_reads: FlowReads) -> int:
    """Records the reverse flow's remote partitions hold (under distinct names only it writes them)."""
    remote = [reverse_reads.remote(key) for key in reverse_reads.progress()]
    marks = listed_watermarks(reverse_reads.flow.target_admin_props(), remote, timeout_s=reverse_reads.timeout_s)
    return sum(end - start for start, end in marks.values())
