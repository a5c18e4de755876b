"""Disaster recovery over HTTP: the recovery point (readable like the status), and the plan, failover, failback and
readiness check of a flow, which always need the translator's token (refused without one, even on loopback).

The actions are the commands' own (`shared/dr`), run in a worker thread, one at a time per flow. Each is logged with
who asked (client address, forwarded-for and user agent) and the report, whose group moves name old and new offsets.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

import structlog
from fastapi import APIRouter, Depends, Query, Request

from services.offset_translator import dr_queries
from services.offset_translator.callers import requester
from services.offset_translator.deps import IndexDep, NowMs, Source, Target
from services.offset_translator.errors import ConflictError, ForbiddenError, UnknownClusterError, UnknownFlowError
from services.offset_translator.models import DrCheck, DrFailbackRequest, DrFailoverRequest, FlowDr, FlowRpo
from services.offset_translator.problems import responses
from shared.config import FlowConfig, MirrorMakerConfig
from shared.dr.failback import FailbackOptions, fail_back
from shared.dr.failover import FailoverOptions, fail_over
from shared.dr.flow_reads import READ_TIMEOUT_S
from shared.dr.readiness import check_readiness
from shared.dr.records import DrReport

_FLOW = "/v1/flows/{source}/{target}"
_log = structlog.get_logger("strait-offset-translator")

rpo = APIRouter(tags=["status"])
dr = APIRouter(tags=["disaster recovery"])


class DrActions:
    """The served config's flows, one lock per flow (two DR actions on one flow never run at once), and the longest
    wait an action may ask for."""

    def __init__(self, config: MirrorMakerConfig, *, max_wait_s: float) -> None:
        self._config = config
        self._max_wait_s = max_wait_s
        self._locks: dict[str, asyncio.Lock] = {}

    def flows(self, source: str, target: str) -> tuple[FlowConfig, FlowConfig | None]:
        """The flow and, when enabled, its reverse; 404 for a cluster the config does not define."""
        for alias in (source, target):
            if alias not in self._config.clusters:
                raise UnknownClusterError(f"unknown cluster '{alias}' (clusters: {', '.join(self._config.clusters)})")
        if source == target:
            raise UnknownFlowError(f"flow '{source}->{target}' has the same source and target")
        flow = self._config.flow(source, target)
        reverse = self._config.flow(target, source)
        return flow, reverse if reverse.enabled else None

    def wait_s(self, asked_s: float) -> float:
        """The drain's bound: what the request asked, at most the translator's `dr_max_wait_s`."""
        return min(asked_s, self._max_wait_s)

    def lock(self, flow: str) -> asyncio.Lock:
        found = self._locks.get(flow)
        if found is None:
            found = self._locks[flow] = asyncio.Lock()
        return found


async def _actions(request: Request) -> DrActions:
    """The app's DR actions; refused outright when the translator has no token (these change the clusters)."""
    if not request.app.state.token_check.has_token:
        raise ForbiddenError(
            "disaster-recovery actions need the translator's token: set STRAIT_TRANSLATOR_TOKEN "
            "(or STRAIT_TRANSLATOR_TOKEN_FILE)"
        )
    actions: DrActions = request.app.state.dr_actions
    return actions


ActionsDep = Annotated[DrActions, Depends(_actions)]


@rpo.get(f"{_FLOW}/rpo", response_model=FlowRpo, operation_id="flowRpo", responses=responses(404, 422))
async def flow_rpo(
    source: Source,
    target: Target,
    index: IndexDep,
    now_ms: NowMs,
    partitions: Annotated[bool, Query(description="also every partition")] = False,
) -> FlowRpo:
    """What a failover now would leave behind on the source: records and seconds not yet on the target."""
    return dr_queries.flow_rpo(index, source, target, now_ms, partitions=partitions)


@rpo.get(f"{_FLOW}/dr", response_model=FlowDr, operation_id="flowDr", responses=responses(404, 422))
async def flow_dr(source: Source, target: Target, index: IndexDep) -> FlowDr:
    """The flow's DR state and its newest failover or failback report."""
    return dr_queries.flow_dr(index, source, target)


async def _run(actions: DrActions, flow: FlowConfig, what: str, by: str, job: object) -> DrReport:
    lock = actions.lock(flow.name)
    if lock.locked():
        raise ConflictError(f"another disaster-recovery action on {flow.name} is running")
    async with lock:
        _log.warning("dr_action_requested", flow=flow.name, action=what, by=by)
        assert callable(job)
        report: DrReport = await asyncio.to_thread(job)
    _log.warning(
        "dr_action_done",
        flow=flow.name,
        action=what,
        by=by,
        dry_run=report.dry_run,
        report=report.id,
        rpo_records=report.rpo.records if report.rpo else None,
        moved=[
            {"group": m.group, "changes": [(p.topic, p.partition, p.previous_offset, p.offset) for p in m.partitions]}
            for m in report.groups_moved
        ][:50],
        skipped=[s.model_dump() for s in report.groups_skipped][:50],
    )
    return report


@dr.post(
    f"{_FLOW}/dr/failover",
    response_model=DrReport,
    operation_id="drFailover",
    responses=responses(403, 404, 409, 422, 502, 503),
)
async def dr_failover(
    source: Source, target: Target, body: DrFailoverRequest, request: Request, actions: ActionsDep
) -> DrReport:
    """Fail the flow over (or plan it, `dry_run`): stop it for good, move its groups, report the RPO; 409 when
    refused (nothing changed)."""
    flow, reverse = actions.flows(source, target)
    by = requester(request)
    options = FailoverOptions(
        planned=body.planned,
        dry_run=body.dry_run,
        timeout_s=actions.wait_s(body.timeout_s),
        groups=body.groups,
        ignore_producers=body.ignore_producers,
        producers_quiet_s=body.producers_quiet_s,
        allow_rewind=body.allow_rewind,
        by=by,
    )
    return await _run(actions, flow, "failover", by, lambda: fail_over(flow, options, reverse))


@dr.post(
    f"{_FLOW}/dr/failback",
    response_model=DrReport,
    operation_id="drFailback",
    responses=responses(403, 404, 409, 422, 502, 503),
)
async def dr_failback(
    source: Source, target: Target, body: DrFailbackRequest, request: Request, actions: ActionsDep
) -> DrReport:
    """Fail the flow back (or plan it): the target's new records reach the source, groups move back, the flow
    resumes; 409 when refused (nothing changed)."""
    flow, reverse = actions.flows(source, target)
    by = requester(request)
    options = FailbackOptions(
        tail=body.tail,
        dry_run=body.dry_run,
        timeout_s=actions.wait_s(body.timeout_s),
        groups=body.groups,
        ignore_producers=body.ignore_producers,
        producers_quiet_s=body.producers_quiet_s,
        allow_rewind=body.allow_rewind,
        by=by,
    )
    return await _run(actions, flow, "failback", by, lambda: fail_back(flow, reverse, options))


@dr.get(f"{_FLOW}/dr/check", response_model=DrCheck, operation_id="drCheck", responses=responses(403, 404, 422))
async def dr_check(source: Source, target: Target, actions: ActionsDep) -> DrCheck:
    """Could the flow fail over and back now? Nothing moves; one line per problem."""
    flow, reverse = actions.flows(source, target)
    problems = await asyncio.to_thread(check_readiness, flow, reverse, timeout_s=actions.wait_s(READ_TIMEOUT_S))
    return DrCheck(flow=flow.name, ready=not problems, problems=problems)
