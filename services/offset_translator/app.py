"""`create_app`: the translator's FastAPI application (API under /v1, probes, /metrics) around its index."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import structlog
from fastapi import APIRouter, Depends, FastAPI
from fastapi.openapi.utils import get_openapi
from prometheus_client import CollectorRegistry

from services.offset_translator import api, cockpit_api, dr_api, ops, problems, ui
from services.offset_translator.auth import TokenCheck, is_loopback, refuse_unprotected_failover, require_token
from services.offset_translator.failover import FailoverExecutor
from services.offset_translator.guard import UNSAFE_METHODS, RequestGuard
from services.offset_translator.history import HistoryRing
from services.offset_translator.index import TranslatorIndex
from services.offset_translator.metrics import IndexCollector, MetricsMiddleware, TranslatorMetrics
from services.offset_translator.models import Problem
from services.offset_translator.offsets_json import GroupOffsetsJson
from services.offset_translator.service import TranslatorService, build_index
from services.offset_translator.settings import TranslatorSettings
from shared.config import MirrorMakerConfig
from shared.control.events import now_ms
from shared.errors import ConfigError
from shared.flow_selection import selected_flows

API_VERSION = "1.0.0"
_log = structlog.get_logger("strait-offset-translator")
# Routes are tried in this order: the hot path (offsets) first, so it matches at the first attempt. The cockpit's
# JSON joins the family of the data it shows.
_FAMILIES: dict[str, tuple[APIRouter, ...]] = {
    "offsets": (api.offsets,),
    "flows": (api.flows, cockpit_api.flows),
    "translate": (api.translate,),
    "topology": (api.topology,),
    "status": (api.status, cockpit_api.status),
    "failover": (api.failover,),
    "rpo": (dr_api.rpo, cockpit_api.rpo),
    "dr": (dr_api.dr,),
    "metrics": (ops.metrics,),
}


def _token_check(settings: TranslatorSettings) -> TokenCheck:
    try:
        token = settings.token()
    except OSError as exc:
        raise ConfigError(
            f"translator_token_file {settings.translator_token_file}: cannot read it ({exc.strerror})",
            key="translator_token_file",
            value=str(settings.translator_token_file),
        ) from exc
    if settings.protected_endpoints and token is None:
        raise ConfigError(
            "protected_endpoints is set but no token is: set STRAIT_TRANSLATOR_TOKEN or STRAIT_TRANSLATOR_TOKEN_FILE",
            key="protected_endpoints",
            value=settings.protected_endpoints,
        )
    return TokenCheck(token, settings.protected())


def _openapi(app: FastAPI) -> Callable[[], dict[str, Any]]:
    """The generated schema plus the Problem schema every error response refers to."""

    def build() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
            problem = Problem.model_json_schema(ref_template="#/components/schemas/{model}")
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            components.update(problem.pop("$defs", {}))
            components["Problem"] = problem
            _document_guard(schema)
            app.openapi_schema = schema
        return app.openapi_schema

    return build


def _document_guard(schema: dict[str, Any]) -> None:
    """Add the answers of the request guard (guard.py), which no route declares, to every operation."""
    for operations in schema.get("paths", {}).values():
        for method, operation in operations.items():
            statuses = (401, 403, 413, 415, 421, 503) if method.upper() in UNSAFE_METHODS else (421, 503)
            for status, entry in problems.responses(*statuses).items():
                operation.setdefault("responses", {}).setdefault(str(status), entry)


def create_app(
    settings: TranslatorSettings,
    config: MirrorMakerConfig,
    *,
    registry: CollectorRegistry | None = None,
    index: TranslatorIndex | None = None,
    follow: bool = True,
    clock: Callable[[], int] = now_ms,
) -> FastAPI:
    """The application for the served flows; with `follow`, its lifespan runs the feeds that fill the index.

    Pass `index` (and `follow=False`) to serve an index filled some other way, e.g. by a test.
    """
    flows = selected_flows(config, settings.flows, require_enabled=False)
    index = index if index is not None else build_index(config, flows, clock=clock)
    service = TranslatorService(settings, config, flows, index) if follow else None
    registry = registry if registry is not None else CollectorRegistry()
    token_check = _token_check(settings)
    metrics = TranslatorMetrics(registry)
    registry.register(IndexCollector(index))

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if service is not None:
            await service.start()
            _log.info("feeds_started", instance=settings.instance_id, flows=[f.name for f in flows])
        try:
            yield
        finally:
            if service is not None:
                await service.stop()

    app = FastAPI(
        title="Strait offset translator",
        version=API_VERSION,
        description="Where consumer groups resume after failover, offset translation, replication topology and "
        "status, over MM2-compatible checkpoints and offset syncs.",
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.index = index
    app.state.offsets_json = GroupOffsetsJson(index.checkpoints)
    app.state.service = service
    app.state.history = service.history if service is not None else HistoryRing(settings.history_interval_s)
    app.state.ui_files = ui.UiFiles.load()
    app.state.registry = registry
    app.state.clock = clock
    app.state.token_check = token_check
    app.state.metrics = metrics
    admin_props = {flow.target: flow.target_admin_props() for flow in flows}
    app.state.failover = FailoverExecutor(admin_props, timeout_s=settings.failover_timeout_s)
    problems.install(app)
    open_failover_refused = settings.token() is None and not is_loopback(settings.host)
    if open_failover_refused:
        _log.warning(
            "failover_off",
            host=settings.host,
            why="no token, and the translator is reachable beyond loopback: set STRAIT_TRANSLATOR_TOKEN",
        )
    app.state.dr_actions = dr_api.DrActions(config, max_wait_s=settings.dr_max_wait_s)
    for family, routers in _FAMILIES.items():
        for router in routers:
            if token_check.is_protected(family):
                app.include_router(router, dependencies=[Depends(require_token)], responses=problems.responses(401))
            elif family == "failover" and open_failover_refused:
                refused = [Depends(refuse_unprotected_failover)]
                app.include_router(router, dependencies=refused, responses=problems.responses(403))
            else:
                app.include_router(router)
    app.include_router(ops.probes)
    app.include_router(ui.router)
    app.add_middleware(
        RequestGuard,
        token_check=token_check,
        loopback=is_loopback(settings.host),
        allowed_hosts=settings.allowed_hosts.split(","),
        max_requests=settings.max_requests,
    )
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    app.openapi = _openapi(app)  # type: ignore[method-assign]
    return app
