"""A flow's replication status, summarised from its instances' ServiceStatus records (`strait status`, translator).

Services may report these optional figures in `ServiceStatus.details` (a status whose figures have the wrong type is
refused when read, `shared/control/status_figures.py`, so the summary can trust the types):
- `records_behind` (int): source records not yet mirrored by this instance (summed over instances);
- `topics` (int): topics this instance serves (the largest count is shown);
- `stalled_partitions` (list of "topic-partition"): partitions behind that made no progress lately;
- `heartbeat_age_s` (number): age of the newest mirrored heartbeat the instance saw;
- `rpo` (data-mirror, an `RpoSummary`): what a failover now would leave behind on the source;
- `dr` (every service of the flow): the flow's DR state once a failover or failback ran (`shared/dr`);
- `group_rpo` (checkpoint): groups whose checkpoint stands for an older commit than their last, and by how much.
A status is stale when it is older than `stale_after_s`: its instance stopped reporting without saying so; or when
it is stamped too far ahead of the reader's clock to be believed (`shared/clock_skew.py`): a status from the future
would otherwise stay 0 s old, and its instance look live, for as long as that future is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from shared.clock_skew import MAX_AHEAD_MS, too_far_ahead
from shared.control.events import ServiceStatus
from shared.dr.records import RpoSummary

FlowState = Literal["running", "starting", "paused", "degraded", "failed", "stopped", "unknown"]
STALE_AFTER_S_DEFAULT = 30.0
# Worst first: the flow takes the worst state among its live instances.
_SEVERITY: tuple[FlowState, ...] = ("failed", "degraded", "paused", "starting", "running")


class InstanceSummary(BaseModel):
    """One service instance's latest status as an operator reads it."""

    model_config = ConfigDict(frozen=True)

    service: str
    instance: str
    state: str = Field(description="as reported: starting, running, paused, degraded, stopped, failed")
    stale: bool = Field(description="no status within the staleness window: the instance may be gone")
    age_s: float = Field(description="seconds since the instance reported this status")
    clock_ahead_s: float | None = Field(
        default=None,
        description=f"set when the status is stamped more than {MAX_AHEAD_MS // 1000} s ahead of the reader's clock: "
        "by how much; the instance's clock (or the record) is wrong, and the status is taken as stale",
    )
    release: str = ""
    started_ts: int = 0
    last_error: str | None = None
    records_behind: int | None = None
    topics: int | None = None
    details: dict[str, Any] = Field(default_factory=dict)


class FlowStatus(BaseModel):
    """Replication status of one flow (source->target)."""

    model_config = ConfigDict(frozen=True)

    flow: str
    source: str
    target: str
    state: FlowState
    instances: list[InstanceSummary]
    records_behind: int | None = Field(default=None, description="sum over live instances that report it")
    topics: int | None = None
    heartbeat_age_s: float | None = Field(default=None, description="age of the newest mirrored heartbeat")
    stalled_partitions: list[str] = Field(default_factory=list)
    last_errors: list[str] = Field(default_factory=list)
    rpo: RpoSummary | None = Field(default=None, description="what a failover now would leave behind (data-mirror)")
    groups_behind: int | None = Field(default=None, description="groups whose checkpoint is older than their commit")
    group_rpo_max_s: float | None = Field(default=None, description="how much older, for the most-behind group")
    dr_state: str | None = Field(default=None, description="failed-over or active, once a DR action ran")
    dr_since_ts: int | None = None
    dr_report_id: str | None = None


def _int(details: Mapping[str, Any], key: str) -> int | None:
    value = details.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _summarize_instance(status: ServiceStatus, now_ms: int, stale_after_s: float) -> InstanceSummary:
    age_s = max(0.0, (now_ms - status.ts) / 1000)
    ahead = too_far_ahead(status.ts, now_ms)
    return InstanceSummary(
        service=status.service,
        instance=status.instance,
        state=status.state,
        stale=status.state != "stopped" and (ahead or age_s > stale_after_s),
        age_s=round(age_s, 3),
        clock_ahead_s=round((status.ts - now_ms) / 1000, 3) if ahead else None,
        release=status.release,
        started_ts=status.started_ts,
        last_error=status.last_error,
        records_behind=_int(status.details, "records_behind"),
        topics=_int(status.details, "topics"),
        details=dict(status.details),
    )


def _flow_state(instances: list[InstanceSummary]) -> FlowState:
    live = [i for i in instances if not i.stale and i.state != "stopped"]
    live_services = {i.service for i in live}
    missing = any(i.stale and i.service not in live_services for i in instances)
    if not live:
        if missing:
            return "degraded"
        return "stopped" if instances else "unknown"
    states = {i.state for i in live}
    if missing and "failed" not in states:
        states.add("degraded")
    return next((state for state in _SEVERITY if state in states), "unknown")


def _heartbeat_age(live: list[InstanceSummary], heartbeat_ts_ms: int | None, now_ms: int) -> float | None:
    if heartbeat_ts_ms is not None:
        return round(max(0.0, (now_ms - heartbeat_ts_ms) / 1000), 3)
    reported = [
        float(age)
        for age in (i.details.get("heartbeat_age_s") for i in live)
        if isinstance(age, int | float) and not isinstance(age, bool)
    ]
    return min(reported) if reported else None


def _rpo(live: list[InstanceSummary]) -> RpoSummary | None:
    """The data-mirror instances' RPO together (records summed, the oldest age); a malformed one is left out."""
    found: list[RpoSummary] = []
    for instance in live:
        raw = instance.details.get("rpo")
        if instance.service != "data-mirror" or not isinstance(raw, dict):
            continue
        try:
            found.append(RpoSummary.model_validate(raw))
        except ValidationError:
            continue
    if not found:
        return None
    if len(found) == 1:
        return found[0]
    ages = [rpo.seconds for rpo in found if rpo.seconds is not None]
    known = [rpo.as_of_ms for rpo in found if rpo.as_of_ms is not None]
    reachable = [rpo.source_reachable for rpo in found if rpo.source_reachable is not None]
    return RpoSummary(
        records=sum(rpo.records for rpo in found),
        seconds=max(ages) if ages else None,
        partitions=sum(rpo.partitions for rpo in found),
        partitions_behind=sum(rpo.partitions_behind for rpo in found),
        as_of_ms=min(known) if known else None,
        source_reachable=all(reachable) if reachable else None,
        topics=sorted((t for rpo in found for t in rpo.topics), key=lambda t: (-t.records, t.topic)),
    )


def _group_rpo(live: list[InstanceSummary]) -> tuple[int | None, float | None]:
    """Checkpoint instances' groups behind their last commit (summed) and the oldest such checkpoint."""
    counts, ages = [], []
    for instance in live:
        raw = instance.details.get("group_rpo") if instance.service == "checkpoint" else None
        if isinstance(raw, dict):
            behind, age = raw.get("groups_behind"), raw.get("max_age_s")
            if isinstance(behind, int) and not isinstance(behind, bool):
                counts.append(behind)
            if isinstance(age, int | float) and not isinstance(age, bool):
                ages.append(float(age))
    return (sum(counts) if counts else None), (max(ages) if ages else None)


def _dr(instances: list[InstanceSummary]) -> dict[str, Any]:
    """The newest DR state any instance reports (every service of a flow follows it)."""
    states = [i.details["dr"] for i in instances if isinstance(i.details.get("dr"), dict)]
    dated = [s for s in states if isinstance(s.get("since_ts"), int) and isinstance(s.get("state"), str)]
    return max(dated, key=lambda s: s["since_ts"], default={})


def belongs_to_flow(status: ServiceStatus, flow: str) -> bool:
    """True for a status of `flow` (spaces around the arrow ignored) or of a whole instance (empty flow)."""
    return status.flow.replace(" ", "") in ("", flow)


def summarize_flow(
    source: str,
    target: str,
    statuses: Iterable[ServiceStatus],
    *,
    now_ms: int,
    heartbeat_ts_ms: int | None = None,
    stale_after_s: float = STALE_AFTER_S_DEFAULT,
) -> FlowStatus:
    """The status of flow source->target from the statuses read on the target (others are ignored)."""
    flow = f"{source}->{target}"
    instances = sorted(
        (_summarize_instance(s, now_ms, stale_after_s) for s in statuses if belongs_to_flow(s, flow)),
        key=lambda i: (i.service, i.instance),
    )
    live = [i for i in instances if not i.stale and i.state != "stopped"]
    behind = [i.records_behind for i in live if i.records_behind is not None]
    topics = [i.topics for i in live if i.topics is not None]
    stalled = sorted(
        {str(p) for i in live for p in (i.details.get("stalled_partitions") or ()) if isinstance(p, str | int)}
    )
    dr = _dr(live or instances)
    report_id = dr.get("report_id")
    groups_behind, group_rpo_max_s = _group_rpo(live)
    return FlowStatus(
        flow=flow,
        source=source,
        target=target,
        state=_flow_state(instances),
        instances=instances,
        records_behind=sum(behind) if behind else None,
        topics=max(topics) if topics else None,
        heartbeat_age_s=_heartbeat_age(live, heartbeat_ts_ms, now_ms),
        stalled_partitions=stalled,
        last_errors=[f"{i.service}/{i.instance}: {i.last_error}" for i in instances if i.last_error],
        rpo=_rpo(live),
        groups_behind=groups_behind,
        group_rpo_max_s=group_rpo_max_s,
        dr_state=dr.get("state"),
        dr_since_ts=dr.get("since_ts"),
        dr_report_id=report_id if isinstance(report_id, str) else None,
    )
