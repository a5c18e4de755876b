"""The cockpit's overview: every flow's health at a glance, and whether the translator still reads its clusters.

Pure, from the index (what reached the targets) and the service's cluster probe. One home for what makes a flow
stand out: `judge` names every reason, worst first, and the page only shows them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from services.offset_translator.cockpit_models import AuditFigures, CockpitFlow, FeedState, Health, Overview
from services.offset_translator.index import TranslatorIndex
from services.offset_translator.queries import flow_status
from shared.flow_status import FlowStatus, InstanceSummary

HEARTBEAT_LATE_S = 30.0  # a mirrored heartbeat older than this: the copy path may be stuck (MM2 beats every second)
RPO_HIGH_S = 60.0  # the oldest record not yet copied is older than this
_AUDIT_COUNTS = ("verified", "missing", "altered", "unexpected", "duplicates", "expired_before_audit")


def feed_states(
    index: TranslatorIndex,
    now_ms: int,
    *,
    stale_after_s: float,
    unreachable: Mapping[str, float],
    fetched: Mapping[str, int],
) -> list[FeedState]:
    """Each followed cluster: stale when its probe finds it gone, or (a target) when the translator's fetches there
    went unanswered for `stale_after_s` (`fetched`: when each target last answered one, epoch ms)."""
    targets = {flow.target for flow in index.flows.values()}
    followed = sorted(targets | {flow.offset_syncs_cluster for flow in index.flows.values()})
    states = []
    for cluster in followed:
        read_ms = fetched.get(cluster)
        age_s = None if read_ms is None else round(max(0.0, (now_ms - read_ms) / 1000), 1)
        since = unreachable.get(cluster)
        reason = None
        if since is not None:
            reason = f"the translator cannot reach cluster {cluster}"
        elif cluster in targets and age_s is not None and age_s > stale_after_s:
            reason = f"cluster {cluster} has not answered the translator's reads for {age_s:.0f} s"
        states.append(
            FeedState(
                cluster=cluster,
                stale=reason is not None,
                reason=reason,
                last_read_age_s=age_s,
                unreachable_since_ms=None if since is None else int(since * 1000),
            )
        )
    return states


def audit_figures(instances: Iterable[InstanceSummary]) -> AuditFigures | None:
    """The live audit instances' figures together (their status details' `audit`, `AuditTotals.details`), or None
    when no audit reports figures for the flow."""
    reported = [i.details.get("audit") for i in instances if i.service == "audit" and not i.stale]
    found = [figures for figures in reported if isinstance(figures, dict) and "verified" in figures]
    if not found:
        return None
    counts = {key: sum(_int(details.get(key)) for details in found) for key in _AUDIT_COUNTS}
    losses = [str(loss) for details in found for loss in details.get("losses") or [] if isinstance(loss, str)]
    return AuditFigures(**counts, losses=losses[:20])


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _mirror_reasons(status: FlowStatus) -> tuple[bool, list[str]]:
    """(copying, why not): a live data-mirror instance reporting the flow running, or what it is instead."""
    mirrors = [i for i in status.instances if i.service == "data-mirror"]
    live = [i for i in mirrors if not i.stale and i.state != "stopped"]
    if any(i.state == "running" for i in live):
        return True, []
    if not mirrors:
        return False, ["no data-mirror has reported for this flow: nothing is copied"]
    if not live:
        newest = min(mirrors, key=lambda i: i.age_s)
        if newest.state == "stopped":
            return False, ["data-mirror stopped: nothing is copied"]
        return False, [f"data-mirror not reporting for {newest.age_s:.0f} s: nothing is copied"]
    worst = live[0]
    why = f": {worst.last_error}" if worst.last_error else ""
    return False, [f"data-mirror {worst.state}{why}"]


def judge(
    status: FlowStatus, mirror_reasons: list[str], audit: AuditFigures | None, stale: str | None
) -> tuple[Health, list[str]]:
    """The flow's health and every reason for it, worst first; `mirror_reasons` says why nothing is copied."""
    down = list(mirror_reasons)
    if status.state == "failed":
        down.append(f"failed: {status.last_errors[0]}" if status.last_errors else "a service failed")
    losses = []
    if audit is not None and (audit.missing or audit.altered):
        losses.append(f"audit: {audit.missing:,} records missing, {audit.altered:,} altered")
    stale_reasons = [f"stale: {stale}"] if stale is not None else []
    if status.dr_state == "failed-over":  # stopped on purpose: data-mirror's silence is expected, not a fault
        return "failed-over", ["failed over: nothing is copied until a failback", *losses, *stale_reasons]
    warn = list(stale_reasons)
    if status.state == "degraded" and (status.last_errors or not down):  # a missing data-mirror says it already
        warn.append(f"degraded: {status.last_errors[0]}" if status.last_errors else "degraded")
    if status.stalled_partitions:
        warn.append(f"{len(status.stalled_partitions)} partitions stalled")
    if status.heartbeat_age_s is not None and status.heartbeat_age_s > HEARTBEAT_LATE_S:
        warn.append(f"newest heartbeat {status.heartbeat_age_s:.0f} s old")
    if status.rpo is not None and status.rpo.seconds is not None and status.rpo.seconds > RPO_HIGH_S:
        warn.append(f"oldest record not copied is {status.rpo.seconds:.0f} s old")
    if status.rpo is not None and status.rpo.source_reachable is False:
        warn.append(f"source {status.source} does not answer: the recovery point is as last known")
    health: Health = "down" if down or losses else "warn" if warn else "ok"
    return health, [*down, *losses, *warn]


def cockpit_flow(
    index: TranslatorIndex, source: str, target: str, now_ms: int, *, stale_after_s: float, stale: str | None
) -> CockpitFlow:
    """One flow for the overview; `stale` says why its target's figures are as last read (None: current)."""
    status = flow_status(index, source, target, now_ms, stale_after_s)
    flow = index.flow(source, target)
    copying, mirror_reasons = _mirror_reasons(status)
    audit = audit_figures(status.instances)
    health, reasons = judge(status, mirror_reasons, audit, stale)
    mirrored = [
        i.details.get("records_mirrored") for i in status.instances if i.service == "data-mirror" and not i.stale
    ]
    latencies = [i.details.get("latency_ms") for i in status.instances if i.service == "heartbeat" and not i.stale]
    newest = index.checkpoints.newest_ms(flow.key)
    rpo = status.rpo
    return CockpitFlow(
        flow=flow.name,
        source=source,
        target=target,
        health=health,
        reasons=reasons,
        state=status.state,
        copying=copying,
        topics=status.topics,
        records_mirrored=sum(_int(m) for m in mirrored) if any(isinstance(m, int) for m in mirrored) else None,
        rpo_records=rpo.records if rpo is not None else status.records_behind,
        rpo_seconds=rpo.seconds if rpo is not None else None,
        rpo_as_of_ms=rpo.as_of_ms if rpo is not None else None,
        source_reachable=rpo.source_reachable if rpo is not None else None,
        heartbeat_age_s=status.heartbeat_age_s,
        latency_ms=next((int(v) for v in latencies if isinstance(v, int | float) and not isinstance(v, bool)), None),
        checkpoint_age_s=None if newest is None else round(max(0.0, (now_ms - newest) / 1000), 1),
        groups=index.checkpoints.group_count(flow.key),
        groups_behind=status.groups_behind,
        group_rpo_max_s=status.group_rpo_max_s,
        audit=audit,
        last_error=status.last_errors[0] if status.last_errors else None,
        dr_state=status.dr_state,
        stale=stale is not None,
    )


def overview(
    index: TranslatorIndex,
    now_ms: int,
    *,
    stale_after_s: float,
    feed_stale_after_s: float,
    unreachable: Mapping[str, float],
    fetched: Mapping[str, int],
) -> Overview:
    """Every served flow, and the feeds (a flow whose target's feed is stale says so)."""
    feeds = feed_states(index, now_ms, stale_after_s=feed_stale_after_s, unreachable=unreachable, fetched=fetched)
    lost = {feed.cluster: feed.reason for feed in feeds if feed.stale}
    flows = [
        cockpit_flow(index, source, target, now_ms, stale_after_s=stale_after_s, stale=lost.get(target))
        for source, target in index.flows
    ]
    return Overview(as_of_ms=now_ms, loaded=index.loaded, stale=bool(lost), flows=flows, feeds=feeds)
