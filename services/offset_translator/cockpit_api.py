"""The JSON only the cockpit needs (the rest of its page reads the API it shares with the tools): the overview, a
flow's recent history, and pages of its partitions and groups. Each router joins the family whose data it shows, so
`protected_endpoints` guards the cockpit's reads as it guards the same data elsewhere."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request

from services.offset_translator import cockpit_pages, overview
from services.offset_translator.cockpit_models import FlowHistory, GroupPage, Overview, PartitionPage, PartitionSort
from services.offset_translator.deps import IndexDep, NowMs, SettingsDep, Source, Target
from services.offset_translator.history import HistoryRing
from services.offset_translator.problems import responses

_FLOW = "/v1/flows/{source}/{target}"

status = APIRouter(tags=["cockpit"])  # family "status"
rpo = APIRouter(tags=["cockpit"])  # family "rpo"
flows = APIRouter(tags=["cockpit"])  # family "flows"

Offset = Annotated[int, Query(ge=0, le=1_000_000, description="rows to skip")]
Limit = Annotated[int, Query(ge=1, le=cockpit_pages.MAX_PAGE, description="rows to return")]
Filter = Annotated[str, Query(max_length=200, description="only rows whose name contains this (any case)")]


@status.get("/v1/cockpit/overview", response_model=Overview, operation_id="cockpitOverview", responses=responses())
async def cockpit_overview(index: IndexDep, now_ms: NowMs, settings: SettingsDep, request: Request) -> Overview:
    """Every flow's health, recovery point, liveness and audit, and whether the translator still reads its clusters."""
    service = request.app.state.service  # None when the app serves an index filled some other way (tests)
    return overview.overview(
        index,
        now_ms,
        stale_after_s=settings.status_stale_after_s,
        feed_stale_after_s=settings.feed_stale_after_s,
        unreachable=service.unreachable() if service is not None else {},
        fetched=service.fetched_ms() if service is not None else {},
    )


@status.get(f"{_FLOW}/history", response_model=FlowHistory, operation_id="flowHistory", responses=responses(404, 422))
async def flow_history(
    source: Source,
    target: Target,
    index: IndexDep,
    request: Request,
    since_ms: Annotated[int, Query(ge=0, le=2**53, description="only samples taken after this (epoch ms)")] = 0,
) -> FlowHistory:
    """The flow's records and seconds behind and heartbeat latency over the last hour, sampled by this replica."""
    flow = index.flow(source, target)
    ring: HistoryRing = request.app.state.history
    return ring.history(flow.name, since_ms)


@rpo.get(
    f"{_FLOW}/partitions", response_model=PartitionPage, operation_id="flowPartitions", responses=responses(404, 422)
)
async def flow_partitions(
    source: Source,
    target: Target,
    index: IndexDep,
    now_ms: NowMs,
    q: Filter = "",
    sort: Annotated[PartitionSort, Query(description="the column to sort by")] = "topic",
    desc: bool = False,
    offset: Offset = 0,
    limit: Limit = 50,
) -> PartitionPage:
    """A page of the flow's partitions: copy position, the source's end, records and seconds behind."""
    return cockpit_pages.partition_page(
        index, source, target, now_ms, query=q, sort=sort, desc=desc, offset=offset, limit=limit
    )


@flows.get(
    f"{_FLOW}/group-summaries",
    response_model=GroupPage,
    operation_id="flowGroupSummaries",
    responses=responses(404, 422, 503),
)
async def flow_group_summaries(
    source: Source,
    target: Target,
    index: IndexDep,
    now_ms: NowMs,
    q: Filter = "",
    offset: Offset = 0,
    limit: Limit = 50,
) -> GroupPage:
    """A page of the flow's consumer groups with how many checkpoints each has and how old they are."""
    return cockpit_pages.group_page(index, source, target, now_ms, query=q, offset=offset, limit=limit)
