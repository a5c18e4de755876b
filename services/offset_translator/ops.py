"""Operational endpoints: liveness, readiness (the index is loaded) and Prometheus metrics."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from services.offset_translator.index import TranslatorIndex
from services.offset_translator.models import Health

probes = APIRouter(tags=["operations"])
metrics = APIRouter(tags=["operations"])


def _health(ok: bool, details: dict[str, Any]) -> JSONResponse:
    body = Health(
        status="ok" if ok else "unavailable",
        loading=list(details.get("loading", [])),
        last_error=details.get("last_error"),
    )
    return JSONResponse(body.model_dump(mode="json"), status_code=200 if ok else 503)


_PROBE_RESPONSES: dict[int | str, dict[str, Any]] = {503: {"model": Health, "description": "not live or not ready"}}


@probes.get("/health", response_model=Health, operation_id="health", responses=_PROBE_RESPONSES)
async def health(request: Request) -> JSONResponse:
    """Liveness: the background feeds have not crashed."""
    service = request.app.state.service
    ok, details = service.liveness() if service is not None else (True, {})
    return _health(ok, details)


@probes.get("/ready", response_model=Health, operation_id="ready", responses=_PROBE_RESPONSES)
async def ready(request: Request) -> JSONResponse:
    """Readiness: every served flow's checkpoints and offset syncs were read to their end once."""
    service = request.app.state.service
    if service is not None:
        ok, details = service.readiness()
    else:
        index: TranslatorIndex = request.app.state.index
        ok, details = index.loaded, {"loading": index.loading()}
    return _health(ok, details)


@metrics.get(
    "/metrics",
    operation_id="metrics",
    response_class=Response,
    responses={200: {"description": "Prometheus text exposition", "content": {"text/plain": {}}}},
)
async def prometheus_metrics(request: Request) -> Response:
    """Prometheus metrics of this process."""
    registry: CollectorRegistry = request.app.state.registry
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)
