"""`strait failover --flow A->B`: stop a flow for good, move its consumer groups to the target, report what was left.

Planned (the source answers): refuse while a producer wrote to the source lately; wait until every partition is
copied to the source's end and every group's last commit is checkpointed (RPO 0, within the timeout; nothing
changes if it is not reached). Unplanned (the source is gone): go on with what reached the target. Then: the flow's
durable state becomes `failed-over` on the target (no service of the flow moves anything from then on, whoever
restarts), data-mirror is waited for to hand its tasks over, each partition's failover point is recorded (the first
source offset not copied, and the target's end), every selected group without members on the target is moved to
its checkpoint, and the report is kept on the target. A dry run does every read and writes nothing.
"""

from __future__ import annotations

import getpass
import re
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from shared.config import FlowConfig
from shared.control import read_statuses
from shared.dr.drain import Drain, drain_copy_and_checkpoints
from shared.dr.flow_reads import READ_TIMEOUT_S, FlowReads, GroupCheckpoints, read_timeout
from shared.dr.group_moves import GroupMover, GroupTarget, Position
from shared.dr.records import DrReport, FlowDrState, PartitionPoint, ProducerSeen
from shared.dr.rpo import PartitionLag, summarize
from shared.dr.store import DrStore
from shared.errors import ConfigError, KafkaOperationError, StraitError
from shared.filters import DefaultGroupFilter
from shared.flow_status import STALE_AFTER_S_DEFAULT
from shared.kafka.group_offsets import GroupAdmin
from shared.kafka.probe import ClusterProbe
from shared.kafka.producer_states import describe_producers

_log = structlog.get_logger("dr")
PROBE_TIMEOUT_S = 8.0
MIRROR_STOP_POLL_S = 1.0


class DrRefused(StraitError):
    """The action was not taken (nothing was changed); the message says why and what to do."""


@dataclass(frozen=True)
class FailoverOptions:
    """What the operator asked for."""

    planned: bool | None = None  # None: planned when the source answers
    dry_run: bool = False
    timeout_s: float = 120.0
    groups: str | None = None  # a regex narrowing the flow's group filter
    ignore_producers: bool = False
    producers_quiet_s: float = 30.0
    allow_rewind: bool = False
    by: str = ""


def who() -> str:
    """The operator running a command: user@host."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"{user}@{socket.gethostname()}"


def new_report_id(now_ms: int) -> str:
    return f"{now_ms}-{uuid.uuid4().hex[:6]}"


def reachable(props: dict[str, str], timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """None when the cluster answers, else why it does not."""
    return ClusterProbe(props, timeout_s=timeout_s).ask()


def selected(group: str, pattern: re.Pattern[str] | None, group_filter: DefaultGroupFilter) -> bool:
    return group_filter.should_replicate_group(group) and (pattern is None or pattern.fullmatch(group) is not None)


def group_pattern(groups: str | None) -> re.Pattern[str] | None:
    """The operator's `--groups` regex, compiled; ConfigError naming it when it is not one."""
    if not groups:
        return None
    try:
        return re.compile(groups)
    except re.error as exc:
        raise ConfigError(f"--groups {groups!r} is not a regular expression: {exc}") from exc


def quiet_producers(
    reads: FlowReads, partitions: list[tuple[str, int]], quiet_s: float, now_ms: int, *, ignore: bool
) -> tuple[list[ProducerSeen], list[str]]:
    """The producers that wrote to the flow's source partitions within `quiet_s`, and notes; DrRefused while there
    are any, or when they cannot be listed (an old broker, no permission), unless `ignore`."""
    cluster = reads.flow.source
    try:
        producers = recent_producers(reads, partitions, quiet_s, now_ms)
    except KafkaOperationError as exc:
        if ignore:
            return [], [f"producers on {cluster} not listed: {exc}"]
        raise DrRefused(f"could not list the producers on {cluster}: {exc}; --ignore-producers goes on") from exc
    if producers and not ignore:
        first = producers[0]
        raise DrRefused(
            f"{len(producers)} producer(s) wrote to {cluster} within {quiet_s:.0f}s (first: producer "
            f"{first.producer_id} on {first.topic}-{first.partition}, {first.age_s}s ago): stop them, or "
            "--ignore-producers"
        )
    return producers, []


def recent_producers(
    reads: FlowReads, partitions: list[tuple[str, int]], quiet_s: float, now_ms: int
) -> list[ProducerSeen]:
    """Producers of the source partitions with a write within the last `quiet_s` (a planned failover waits for them)."""
    found = describe_producers(reads.flow.source_admin_props(), partitions, cluster=reads.flow.source)
    seen = []
    for (topic, partition), producers in sorted(found.items()):
        for producer in producers:
            age = None if producer.last_timestamp_ms < 0 else max(0.0, (now_ms - producer.last_timestamp_ms) / 1000)
            seen.append(
                ProducerSeen(
                    topic=topic,
                    partition=partition,
                    producer_id=producer.producer_id,
                    producer_epoch=producer.producer_epoch,
                    last_timestamp_ms=producer.last_timestamp_ms,
                    age_s=None if age is None else round(age, 1),
                )
            )
    return [p for p in seen if p.age_s is None or p.age_s < quiet_s]


def wait_for_mirror_to_stop(flow: FlowConfig, timeout_s: float, sleep: Callable[[float], None] = time.sleep) -> str:
    """Until every live data-mirror instance of the flow reports it failed over with no task running (bounded):
    its tasks have committed their last positions. Returns what was seen, for the report."""
    deadline = time.monotonic() + timeout_s
    while True:
        now = int(time.time() * 1000)
        statuses = read_statuses(flow.target_consumer_props(), timeout_s=min(10, timeout_s))
        live = [
            s
            for s in statuses.values()
            if s.service == "data-mirror"
            and s.flow.replace(" ", "") == flow.name
            and s.state != "stopped"
            and (now - s.ts) / 1000 <= STALE_AFTER_S_DEFAULT
        ]
        waiting = [
            s.instance
            for s in live
            if (s.details.get("dr") or {}).get("state") != "failed-over" or s.details.get("tasks_running", 0) != 0
        ]
        if not waiting:
            return "no data-mirror running" if not live else f"data-mirror stopped the flow ({len(live)} instance(s))"
        if time.monotonic() >= deadline:
            return f"data-mirror did not confirm the stop within {timeout_s:.0f}s ({', '.join(waiting)})"
        sleep(MIRROR_STOP_POLL_S)


def failover_points(reads: FlowReads, source_ends: dict[tuple[str, int], int] | None) -> list[PartitionPoint]:
    """Each copied partition's first source offset not on the target, the target's end, and the source's end (now
    when `source_ends` is given, else as the copy tasks last saw it)."""
    progress = reads.progress()
    target_ends = reads.target_ends([reads.remote(key) for key in progress])
    points = []
    for key, committed in sorted(progress.items()):
        remote = reads.remote(key)
        seen_end = committed.report.end_offset if committed.report is not None else None
        end = source_ends.get(key, seen_end) if source_ends is not None else seen_end
        points.append(
            PartitionPoint(
                topic=key[0],
                partition=key[1],
                remote_topic=remote[0],
                source_offset=committed.next_offset,
                target_offset=target_ends.get(remote, 0),
                source_end=end,
                records_behind=None if end is None else max(0, end - committed.next_offset),
            )
        )
    return points


def checkpoint_targets(
    checkpoints: GroupCheckpoints, pattern: re.Pattern[str] | None, group_filter: DefaultGroupFilter
) -> list[GroupTarget]:
    """Every selected group's position on the target, from its latest checkpoints."""
    return [
        GroupTarget(
            group,
            {key: Position(cp.downstream_offset, "checkpoint", cp.metadata) for key, cp in sorted(entries.items())},
        )
        for group, entries in sorted(checkpoints.items())
        if selected(group, pattern, group_filter)
    ]


def reverse_positions(
    flow: FlowConfig, reverse: FlowConfig, targets: list[GroupTarget], *, timeout_s: float = READ_TIMEOUT_S
) -> list[str]:
    """Add to each group's positions on the target the topics it reads on the source as copies of the target's own
    (the reverse flow's remote topics, e.g. `B.orders` on A): its commits there, back through the reverse flow's
    offset syncs, give where it resumes on the original (`orders` on B). Needs the source (the commits live there).
    Under one name on both sides the checkpoints already cover these topics."""
    reverse_reads = FlowReads(reverse, timeout_s=timeout_s)
    policy = reverse_reads.context.topics.policy
    admin = GroupAdmin.connect(flow.source, flow.source_admin_props(), timeout_s=reverse_reads.timeout_s)
    commits, errors = admin.committed_offsets([target.group for target in targets])
    notes = [f"could not read group {group} on {flow.source}: {error}" for group, error in sorted(errors.items())]
    syncs = None
    for target in targets:
        for (topic, partition), committed in sorted(commits.get(target.group, {}).items()):
            original = policy.upstream_topic(topic) if policy.topic_source(topic) == flow.target else None
            if original is None or original == topic:  # one name on both sides: the checkpoint has placed it
                continue
            syncs = syncs or reverse_reads.syncs()
            found = syncs.translate_upstream(original, partition, committed.offset)
            if found is None:
                notes.append(f"group {target.group} {topic}-{partition}: no offset sync of {reverse.name} places it")
                continue
            target.positions[(original, partition)] = Position(found, "reverse", committed.metadata)
    return notes


def fail_over(flow: FlowConfig, options: FailoverOptions, reverse: FlowConfig | None = None) -> DrReport:
    """Run (or, with `dry_run`, plan) the flow's failover; DrRefused when it is not taken."""
    started = int(time.time() * 1000)
    reads = FlowReads(flow, timeout_s=read_timeout(options.timeout_s))
    store = DrStore(flow)
    view = store.read()
    state = view.states.get(flow.name)
    if state is not None and state.stopped and (flow.name, state.report_id or "") in view.reports:
        raise DrRefused(
            f"{flow.name} failed over already (report {state.report_id}); `strait failback --flow {flow.name}` "
            "brings it back"
        )
    unfinished = state is not None and state.stopped  # stopped by a failover that wrote no report: finish it
    if unfinished and options.planned:
        raise DrRefused(
            f"{flow.name} is stopped by a failover that did not finish ({state.report_id if state else ''}): its "
            "copy no longer runs, so a planned drain cannot end; run without --planned to finish it"
        )
    down = reachable(flow.source_admin_props())
    planned = options.planned if options.planned is not None else (down is None and not unfinished)
    if planned and down is not None:
        raise DrRefused(
            f"a planned failover needs the source: {down}; --unplanned goes on with what reached {flow.target}"
        )
    pattern = group_pattern(options.groups)
    group_filter = DefaultGroupFilter(flow.settings.groups, flow.settings.groups_exclude)
    report_id = new_report_id(started)
    notes: list[str] = []
    if unfinished:
        notes.append(f"finishes the failover begun as {state.report_id if state else ''} (its copy already stopped)")
    producers: list[ProducerSeen] = []
    source_ends = None
    if planned:
        partitions = reads.source_partitions()
        producers, said = quiet_producers(
            reads, partitions, options.producers_quiet_s, started, ignore=options.ignore_producers
        )
        notes += said
        drained = drain_copy_and_checkpoints(
            Drain(reads, partitions, lambda group: selected(group, pattern, group_filter)),
            timeout_s=options.timeout_s,
        )
        if drained.problem is not None:
            raise DrRefused(f"not drained within {options.timeout_s:.0f}s: {drained.problem}; nothing was changed")
        source_ends = drained.source_ends
    else:
        notes.append(f"unplanned: {down or 'asked to go on without the source'}")
    if not options.dry_run:
        store.write(
            FlowDrState(flow=flow.name, state="failed-over", action="failover", report_id=report_id, by=options.by)
        )
        _log.warning("flow_failed_over", flow=flow.name, report=report_id, planned=planned, by=options.by)
        notes.append(wait_for_mirror_to_stop(flow, options.timeout_s))
    points = failover_points(reads, source_ends)
    targets = checkpoint_targets(reads.checkpoints(), pattern, group_filter)
    if reverse is not None and planned:
        notes += reverse_positions(flow, reverse, targets, timeout_s=reads.timeout_s)
    moved, skipped = GroupMover(flow.target, flow.target_admin_props()).move(
        targets, dry_run=options.dry_run, allow_rewind=options.allow_rewind
    )
    progress = {(p.topic, p.partition): p for p in points}
    behind = {key: committed.report.behind_since_ms for key, committed in reads.progress().items() if committed.report}
    now = int(time.time() * 1000)
    rpo = summarize(
        [
            PartitionLag(p.topic, p.partition, p.source_offset, p.source_end, behind.get(key))
            for key, p in progress.items()
        ],
        now_ms=now,
        source_reachable=down is None,
    )
    report = DrReport(
        flow=flow.name,
        id=report_id,
        kind="failover",
        planned=planned,
        dry_run=options.dry_run,
        by=options.by,
        started_ms=started,
        ended_ms=now,
        rpo=rpo,
        points=points,
        producers=producers,
        groups_moved=moved,
        groups_skipped=skipped,
        notes=notes,
    )
    if not options.dry_run:
        store.write(report)
        for move in moved:
            changed = [p for p in move.partitions if p.action == "set"]
            _log.info(
                "group_failed_over",
                flow=flow.name,
                group=move.group,
                cluster=move.cluster,
                by=options.by,
                report=report_id,
                changes=[(p.topic, p.partition, p.previous_offset, p.offset) for p in changed],
            )
    return report
