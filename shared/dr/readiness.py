"""`strait dr check --flow A->B`: could the flow fail over and back now? Reads only; one line per problem found.

What a failover and a failback rest on: the flow copies (its services report running, nothing stalled, not failed
over), every group's last commit is checkpointed, the audit found nothing lost or foreign, topic configs and ACLs
are on the target as topic-sync and acl-sync would make them, the reverse flow is configured (failback copies
through it), and every principal with ACLs on the source's topics has some on the target (applications that move
there can act).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from shared.acl_rules import missing_acls, remote_acls
from shared.config import FlowConfig
from shared.config_rules import alter_ops
from shared.control import read_statuses
from shared.dr.drain import Drain, groups_behind
from shared.dr.flow_reads import READ_TIMEOUT_S, FlowReads
from shared.dr.store import DrStore
from shared.errors import StraitError
from shared.filters import DefaultConfigPropertyFilter, DefaultGroupFilter
from shared.flow_status import summarize_flow
from shared.kafka.acl_admin import AclAdmin, describe
from shared.kafka.topic_admin import TopicAdmin

SHOWN = 5  # items named per problem line; the counts are complete
CHECKPOINT_GRACE_S = 5.0  # a commit seen behind its checkpoint is looked at again this much later (one in flight)


def _named(items: list[str]) -> str:
    more = f" (+{len(items) - SHOWN} more)" if len(items) > SHOWN else ""
    return ", ".join(items[:SHOWN]) + more


def _flow_health(flow: FlowConfig, timeout_s: float) -> list[str]:
    now = int(time.time() * 1000)
    statuses = list(read_statuses(flow.target_consumer_props(), timeout_s=min(10, timeout_s)).values())
    status = summarize_flow(flow.source, flow.target, statuses, now_ms=now)
    problems = []
    if status.dr_state == "failed-over":
        problems.append(f"the flow is failed over (report {status.dr_report_id}): fail back first")
    elif status.state != "running":
        why = f": {status.last_errors[0]}" if status.last_errors else ""
        problems.append(f"the flow is {status.state}, not running{why}")
    if status.stalled_partitions:
        problems.append(f"{len(status.stalled_partitions)} partition(s) stalled: {_named(status.stalled_partitions)}")
    audits = [i for i in status.instances if i.service == "audit" and not i.stale and i.state != "stopped"]
    if not audits:
        problems.append("no audit runs for the flow: the copy is not proven (start strait-audit)")
    for audit in audits:
        figures = audit.details.get("audit")
        if not isinstance(figures, dict):
            continue
        lost = int(figures.get("missing", 0) or 0) + int(figures.get("altered", 0) or 0)
        foreign = int(figures.get("unexpected", 0) or 0)
        if lost:
            problems.append(
                f"the audit found {lost} record(s) lost: {_named([str(x) for x in figures.get('losses', [])])}"
            )
        if foreign:
            problems.append(f"the audit found {foreign} record(s) on the target that no source record explains")
    return problems


def _checkpoints(reads: FlowReads) -> list[str]:
    flow = reads.flow
    group_filter = DefaultGroupFilter(flow.settings.groups, flow.settings.groups_exclude)
    drain = Drain(reads, reads.source_partitions(), group_filter.should_replicate_group)
    marks = reads.source_marks(drain.partitions)
    behind = groups_behind(drain, marks)
    if behind:  # a commit a moment old may be on its way: only what is still behind a little later counts
        time.sleep(CHECKPOINT_GRACE_S)
        behind = [entry for entry in groups_behind(drain, marks) if entry in behind]
    return [f"checkpoints behind the last commit: {_named(behind)}"] if behind else []


def _configs(reads: FlowReads) -> list[str]:
    flow, topics = reads.flow, reads.context.topics
    source = TopicAdmin(flow.source, flow.source_admin_props(), timeout_s=reads.timeout_s)
    target = TopicAdmin(flow.target, flow.target_admin_props(), timeout_s=reads.timeout_s)
    counts = {t: n for t, n in source.partition_counts().items() if topics.should_replicate(t)}
    remote_counts = target.partition_counts()
    problems = []
    missing = [t for t in sorted(counts) if topics.remote_topic(t) not in remote_counts]
    if missing:
        problems.append(f"{len(missing)} topic(s) have no remote topic on {flow.target}: {_named(missing)}")
    fewer = [
        f"{t} ({remote_counts[topics.remote_topic(t)]} of {n})"
        for t, n in sorted(counts.items())
        if topics.remote_topic(t) in remote_counts and remote_counts[topics.remote_topic(t)] < n
    ]
    if fewer:
        problems.append(f"remote topics with fewer partitions than their source: {_named(fewer)}")
    if not flow.settings.sync_topic_configs_enabled:
        return problems
    present = [t for t in sorted(counts) if topics.remote_topic(t) in remote_counts]
    described, errors = source.describe_configs(present)
    remote, remote_errors = target.describe_configs([topics.remote_topic(t) for t in present])
    config_filter = DefaultConfigPropertyFilter(
        flow.settings.config_properties_exclude, flow.settings.use_defaults_from
    )
    differ = []
    for topic in present:
        entries, there = described.get(topic), remote.get(topics.remote_topic(topic))
        if entries is None or there is None:
            continue
        ops = alter_ops(entries, there, config_filter)
        if ops:
            differ.append(f"{topic} ({', '.join(op.name for op in ops[:3])})")
    if differ:
        problems.append(f"topic configs differ on {flow.target}: {_named(differ)}")
    problems += [f"configs not read: {error}" for error in [*errors, *remote_errors][:SHOWN]]
    return problems


def _acls(reads: FlowReads) -> list[str]:
    flow, topics = reads.flow, reads.context.topics
    source = asyncio.run(
        AclAdmin(flow.source, flow.source_admin_props(), timeout_s=reads.timeout_s).describe_topic_acls()
    )
    target = asyncio.run(
        AclAdmin(flow.target, flow.target_admin_props(), timeout_s=reads.timeout_s).describe_topic_acls()
    )
    if source is None:
        return []  # no authorizer on the source: nothing to carry over
    if target is None:
        return [f"{flow.source} has ACLs but {flow.target} has no authorizer"]
    problems = []
    if flow.settings.sync_topic_acls_enabled:
        wanted = remote_acls(source, should_replicate_topic=topics.should_replicate, remote_topic=topics.remote_topic)
        absent = missing_acls(wanted, target)
        if absent:
            problems.append(f"{len(absent)} ACL(s) missing on {flow.target}: {_named([describe(b) for b in absent])}")
    principals = {b.principal for b in source if topics.should_replicate(b.resource_name)}
    on_target = {b.principal for b in target}
    lacking = sorted(principals - on_target)
    if lacking:
        problems.append(
            f"principal(s) with ACLs on {flow.source}'s topics but none on {flow.target}: {_named(lacking)}"
        )
    return problems


def check_readiness(flow: FlowConfig, reverse: FlowConfig | None, *, timeout_s: float = READ_TIMEOUT_S) -> list[str]:
    """Every problem found, one line each; [] when the flow is ready. A check that could not run is a problem.
    Each read is bounded by `timeout_s`."""
    reads = FlowReads(flow, timeout_s=timeout_s)
    problems: list[str] = []
    if reverse is None:
        problems.append(
            f"no reverse flow: set {flow.target}->{flow.source}.enabled=true so a failback can copy back what is "
            f"written on {flow.target}"
        )
    else:
        reverse_state = DrStore(reverse, timeout_s=timeout_s).state()
        if reverse_state is not None and reverse_state.stopped:
            problems.append(f"the reverse flow {reverse.name} is failed over (report {reverse_state.report_id})")
    checks: tuple[tuple[str, Callable[[], list[str]]], ...] = (
        ("flow status", lambda: _flow_health(flow, timeout_s)),
        ("checkpoints", lambda: _checkpoints(reads)),
        ("topics and configs", lambda: _configs(reads)),
        ("ACLs", lambda: _acls(reads)),
    )
    for name, check in checks:
        try:
            problems += check()
        except (StraitError, TimeoutError) as exc:
            problems.append(f"could not check the {name}: {exc}")
    return problems
