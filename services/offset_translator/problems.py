"""Errors as RFC 9457 problem JSON: one handler maps the domain errors to HTTP statuses, others keep the shape.

Every status an endpoint can answer is documented in the OpenAPI schema with the `Problem` schema.
"""

from __future__ import annotations

from typing import Any

import structlog
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from services.offset_translator.errors import (
    ConflictError,
    ForbiddenError,
    NotFoundError,
    NotReadyError,
    UnauthorizedError,
)
from services.offset_translator.models import InvalidInput, Problem
from shared.dr.failover import DrRefused
from shared.errors import AuthorizationError, ConfigError, KafkaOperationError, StraitError

PROBLEM_MEDIA_TYPE = "application/problem+json"
RETRY_AFTER_S = "2"
_log = structlog.get_logger(__name__)

# Most specific first: the first family an error belongs to decides its status.
_STATUS: tuple[tuple[type[StraitError], int, str], ...] = (
    (UnauthorizedError, 401, "Unauthorized"),
    (ForbiddenError, 403, "Forbidden"),
    (NotFoundError, 404, "Not found"),
    (ConflictError, 409, "Conflict"),
    (DrRefused, 409, "Refused"),
    (NotReadyError, 503, "Not ready"),
    (ConfigError, 422, "Invalid input"),
    (AuthorizationError, 502, "Not authorized on the cluster"),
    (KafkaOperationError, 503, "Cluster unavailable"),
)
_DESCRIPTIONS = {
    401: "the endpoint needs the bearer token",
    403: "the endpoint is off on this translator (failover without a token on a non-loopback address)",
    404: "unknown cluster, flow, group or topic-partition",
    409: "the group is active on the target",
    413: "the request body is larger than the translator takes",
    415: "the request body is not JSON",
    421: "a loopback translator was asked under a host name that is not its own",
    422: "malformed input",
    502: "the translator's principal lacks a permission on the cluster",
    503: "index still loading or cluster unavailable; retry later",
    504: "a read of the clusters did not end in time",
}


def problem_response(status: int, title: str, detail: str, **extra: Any) -> JSONResponse:
    """A problem JSON response; `headers` in `extra` become response headers."""
    headers = extra.pop("headers", None)
    body = Problem(title=title, status=status, detail=detail, **extra).model_dump(mode="json", exclude_none=True)
    return JSONResponse(body, status_code=status, media_type=PROBLEM_MEDIA_TYPE, headers=headers)


def status_of(exc: StraitError) -> tuple[int, str]:
    """The HTTP status and title for a domain error (500 only for a family nobody mapped)."""
    for family, status, title in _STATUS:
        if isinstance(exc, family):
            if family is KafkaOperationError and not exc.retriable:
                return 502, "Cluster error"
            return status, title
    return 500, "Internal error"


async def _domain_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StraitError)
    status, title = status_of(exc)
    headers: dict[str, str] = {}
    if status == 401:
        headers["WWW-Authenticate"] = "Bearer"
    if status == 503:
        headers["Retry-After"] = RETRY_AFTER_S
    if status >= 500 and not isinstance(exc, NotReadyError):
        _log.warning("request_failed", status=status, error=str(exc), error_type=type(exc).__name__)
    return problem_response(status, title, str(exc), headers=headers or None)


async def _invalid_request(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    issues = [
        InvalidInput(
            loc=[str(p) if not isinstance(p, int) else p for p in e.get("loc", ())], msg=e["msg"], type=e["type"]
        )
        for e in exc.errors()
    ]
    first = issues[0] if issues else None
    where = ".".join(str(p) for p in first.loc) if first else "request"
    detail = f"{where}: {first.msg}" if first else "invalid request"
    return problem_response(422, "Invalid input", detail, errors=issues)


async def _http_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 400:
        # FastAPI's answer to a body that is not JSON at all: malformed input, like any other (422).
        return problem_response(422, "Invalid input", f"body: {exc.detail} (expected a JSON object)")
    return problem_response(exc.status_code, str(exc.detail), str(exc.detail), headers=exc.headers)


async def _timed_out(_: Request, exc: Exception) -> JSONResponse:
    """A read that did not end in time (a DR action's drain or scan): the cluster is slow, retrying may do."""
    _log.warning("request_timed_out", error=str(exc))
    return problem_response(504, "Timed out", f"timed out: {exc}")


async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
    _log.error("request_crashed", error=repr(exc), exc_info=exc)
    return problem_response(500, "Internal error", f"{type(exc).__name__} (see the translator's log)")


def install(app: FastAPI) -> None:
    """Register the handlers on `app`."""
    app.add_exception_handler(StraitError, _domain_error)
    app.add_exception_handler(RequestValidationError, _invalid_request)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(TimeoutError, _timed_out)
    app.add_exception_handler(Exception, _unexpected)


def responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` entries for error statuses, all with the Problem schema."""
    return {
        status: {
            "description": _DESCRIPTIONS[status],
            "content": {PROBLEM_MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}},
        }
        for status in statuses
    }
