"""The versioned HTTP API: one router per endpoint family, so each family can be put behind the token."""

from __future__ import annotations

from typing import Annotated

import structlog
from fastapi import APIRouter, Query, Request, Response

from services.offset_translator import queries
from services.offset_translator.callers import requester
from services.offset_translator.deps import (
    Cluster,
    FailoverDep,
    IndexDep,
    MetricsDep,
    NowMs,
    SettingsDep,
    Source,
    Target,
)
from services.offset_translator.errors import ConflictError
from services.offset_translator.models import (
    ClusterList,
    FailoverRequest,
    FailoverResult,
    FlowList,
    FlowStatus,
    GroupList,
    GroupOffsets,
    OffsetTranslation,
    StatusReport,
    Topology,
)
from services.offset_translator.problems import responses
from shared.errors import StraitError

_log = structlog.get_logger("strait-offset-translator")

_FLOW = "/v1/flows/{source}/{target}"
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


flows = APIRouter(tags=["flows"])
offsets = APIRouter(tags=["offsets"])
translate = APIRouter(tags=["translate"])
topology = APIRouter(tags=["topology"])
status = APIRouter(tags=["status"])
failover = APIRouter(tags=["failover"])


@flows.get("/v1/flows", response_model=FlowList, operation_id="listFlows", responses=responses())
async def list_flows(index: IndexDep) -> FlowList:
    """The flows this translator serves, where their internal topics live and whether they are loaded."""
    return FlowList(flows=queries.flow_infos(index))


@flows.get(f"{_FLOW}/groups", response_model=GroupList, operation_id="listGroups", responses=responses(404, 422, 503))
async def list_groups(source: Source, target: Target, index: IndexDep) -> GroupList:
    """Consumer groups that have checkpoints on the flow."""
    return queries.group_list(index, source, target)


@offsets.get(
    f"{_FLOW}/offsets", response_model=GroupOffsets, operation_id="translateOffsets", responses=responses(404, 422, 503)
)
async def group_offsets(
    source: Source,
    target: Target,
    group: Annotated[str, Query(min_length=1, description="the consumer group", examples=["orders-app"])],
    request: Request,
) -> Response:
    """Where the group resumes on the target: MM2's RemoteClusterUtils.translateOffsets over the checkpoints topic."""
    # The hot path of the translator: index, clock and cached body straight from the app state (no dependencies
    # to solve) and the body served as bytes, skipping FastAPI's validation of every partition.
    state = request.app.state
    body = queries.group_offsets_json(state.index, state.offsets_json, source, target, group, state.clock())
    return Response(body, media_type="application/json")


@translate.get(
    f"{_FLOW}/translate",
    response_model=OffsetTranslation,
    operation_id="translateOffset",
    responses=responses(404, 422, 503),
)
async def translate_offset(
    source: Source,
    target: Target,
    topic: Annotated[str, Query(min_length=1, description="the topic on the source", examples=["orders"])],
    partition: Annotated[int, Query(ge=0, le=INT32_MAX, examples=[0])],
    offset: Annotated[int, Query(ge=0, le=INT64_MAX, description="an offset of the source partition", examples=[12])],
    index: IndexDep,
) -> OffsetTranslation:
    """Translate one source offset to the target through the offset syncs."""
    return queries.translate_offset(index, source, target, topic, partition, offset)


@topology.get("/v1/clusters", response_model=ClusterList, operation_id="listClusters", responses=responses())
async def list_clusters(index: IndexDep) -> ClusterList:
    """Cluster aliases of the config."""
    return ClusterList(clusters=sorted(index.cluster_policies))


@topology.get(
    "/v1/clusters/{cluster}/topology",
    response_model=Topology,
    operation_id="clusterTopology",
    responses=responses(404, 422, 503),
)
async def cluster_topology(cluster: Cluster, index: IndexDep, now_ms: NowMs) -> Topology:
    """Upstream clusters, replication hops, heartbeat, checkpoint and remote topics (MM2's MirrorClient)."""
    return queries.cluster_topology(index, cluster, now_ms)


@status.get("/v1/status", response_model=StatusReport, operation_id="replicationStatus", responses=responses())
async def replication_status(index: IndexDep, now_ms: NowMs, settings: SettingsDep) -> StatusReport:
    """Replication status of every served flow, from the services' status records."""
    return StatusReport(flows=queries.all_statuses(index, now_ms, settings.status_stale_after_s))


@status.get(f"{_FLOW}/status", response_model=FlowStatus, operation_id="flowStatus", responses=responses(404, 422))
async def flow_status(
    source: Source, target: Target, index: IndexDep, now_ms: NowMs, settings: SettingsDep
) -> FlowStatus:
    """Replication status of one flow: instances, states, records behind, heartbeat age, stalled partitions, errors."""
    return queries.flow_status(index, source, target, now_ms, settings.status_stale_after_s)


@failover.post(
    f"{_FLOW}/failover",
    response_model=FailoverResult,
    operation_id="failover",
    responses=responses(404, 409, 422, 502, 503),
)
async def fail_over(
    source: Source,
    target: Target,
    request: FailoverRequest,
    http: Request,
    index: IndexDep,
    now_ms: NowMs,
    executor: FailoverDep,
    metrics: MetricsDep,
) -> FailoverResult:
    """Write the group's translated offsets into the group on the target; 409 while it has members there."""
    flow = f"{source}->{target}"
    # Looked up first: a request for a flow or group the translator does not know is answered 404, not logged
    translated = queries.group_offsets(index, source, target, request.group, now_ms)
    asked = {
        "flow": flow,
        "group": request.group[:300],
        "by": requester(http),
        "dry_run": request.dry_run,
        "allow_rewind": request.allow_rewind,
    }
    _log.warning("group_failover_requested", **asked)
    try:
        result = await executor.run(translated, request)
    except ConflictError as exc:
        metrics.failovers.labels(flow, "refused").inc()
        _log.warning("group_failover_refused", **asked, why=str(exc))
        raise
    except StraitError as exc:
        metrics.failovers.labels(flow, "failed").inc()
        _log.warning("group_failover_failed", **asked, why=str(exc))
        raise
    metrics.failovers.labels(flow, "dry-run" if request.dry_run else "applied").inc()
    _log.warning(
        "group_failover_done",
        **asked,
        applied=result.applied,
        group_state=result.group_state,
        changes=[(p.topic, p.partition, p.previous_offset, p.offset, p.action) for p in result.partitions],
    )
    return result
