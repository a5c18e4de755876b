"""structlog JSON logging (stdlib loggers routed into it, secrets masked) and the metrics/health HTTP endpoint."""

from __future__ import annotations

import json
import logging
import re
import sys
import threading
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from http.server import BaseHTTPRequestHandler
from typing import Any, TextIO

import structlog
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from shared.bounded_http import MAX_CONNECTIONS, REQUEST_READ_TIMEOUT_S, BoundedHTTPServer
from shared.log_repeats import RepeatFilter, RepeatLimiter

_SECRET_KEY = re.compile(r"pass(word)?|secret|token|jaas|credential|api[_.-]?key", re.IGNORECASE)
_known_secrets: set[str] = set()


def register_secrets(values: Iterable[str]) -> None:
    """Values (resolved passwords, tokens) that must never reach a log line; they are masked everywhere."""
    _known_secrets.update(v for v in values if v and len(v) >= 4)


def _mask(text: str) -> str:
    for secret in _known_secrets:
        if secret in text:
            text = text.replace(secret, "***")
    return text


def _redact(_: Any, __: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """structlog processor: mask secret-looking keys and any registered secret value, at any depth."""
    for key, value in list(event_dict.items()):
        event_dict[key] = _redacted(key, value)
    return event_dict


def _redacted(key: object, value: Any, depth: int = 0) -> Any:
    """`value` with secrets masked: a client config or a list of them logged whole is masked inside too."""
    if isinstance(key, str) and _SECRET_KEY.search(key) and value is not None:
        return "***"
    if isinstance(value, str):
        return _mask(value) if _known_secrets else value
    if depth >= 8:  # deeper than any config we log: say so rather than walk a cycle
        return "<nested too deep to check for secrets>"
    if isinstance(value, Mapping):
        return {k: _redacted(k, v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_redacted(None, item, depth + 1) for item in value]
    return value


# Client libraries (librdkafka's lines come through the native stderr relay): each cause is written once per window.
CLIENT_LOGGERS = ("aiokafka", "kafka", "librdkafka")


def configure_logging(
    service: str, level: str = "INFO", stream: TextIO | None = None, repeats: RepeatLimiter | None = None
) -> None:
    """One JSON object per line on `stream` for structlog and every stdlib logger (aiokafka, uvicorn, py4j);
    client libraries' lines limited per cause by `repeats` (a fresh RepeatLimiter unless given)."""

    def add_service(_: Any, __: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        event_dict.setdefault("service", service)  # in every thread, not only where the context was bound
        return event_dict

    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        add_service,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.format_exc_info,
        _redact,
    ]
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[structlog.stdlib.ExtraAdder(), *shared],
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.JSONRenderer(),
        ],
    )
    handler = logging.StreamHandler(stream or sys.stdout)
    handler.setFormatter(formatter)
    handler.addFilter(RepeatFilter(CLIENT_LOGGERS, repeats))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in ("aiokafka", "kafka", "py4j", "uvicorn.access"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
    structlog.contextvars.bind_contextvars(service=service)


HealthProbe = Callable[[], tuple[bool, Mapping[str, Any]]]


class ObservabilityServer:
    """Serves /metrics (Prometheus), /health (liveness) and /ready (readiness) from a daemon thread.

    A thread, not the event loop, so a busy loop or the PySpark driver can still be scraped and probed; a
    bounded number of connections, each with a read timeout, so idle clients cannot exhaust it (BoundedHTTPServer).
    """

    def __init__(
        self,
        registry: CollectorRegistry,
        *,
        live: HealthProbe,
        ready: HealthProbe,
        host: str = "127.0.0.1",
        port: int = 0,
        request_timeout_s: float = REQUEST_READ_TIMEOUT_S,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        routes: dict[str, Callable[[], tuple[int, bytes, str]]] = {
            "/metrics": lambda: (200, generate_latest(registry), CONTENT_TYPE_LATEST),
            "/health": lambda: _probe_response(live),
            "/ready": lambda: _probe_response(ready),
        }

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.answering(self.request)  # read whole: no longer idle, so not evicted for a newcomer
                route = routes.get(self.path.split("?", 1)[0])
                status, body, content_type = route() if route else (404, b'{"error":"not found"}', "application/json")
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                return  # probes every few seconds would drown the service's own log

        server = BoundedHTTPServer(
            (host, port), Handler, request_timeout_s=request_timeout_s, max_connections=max_connections
        )
        self._server = server
        self._thread = threading.Thread(target=self._server.serve_forever, name="observability", daemon=True)

    @property
    def port(self) -> int:
        """The bound port (useful when 0 asked for any free one)."""
        return int(self._server.server_address[1])

    def start(self) -> None:
        """Start serving in the background."""
        self._thread.start()

    def stop(self) -> None:
        """Stop serving; safe to call twice."""
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()


def _probe_response(probe: HealthProbe) -> tuple[int, bytes, str]:
    try:
        ok, details = probe()
    except Exception as exc:  # a probe must answer, even about its own failure
        ok, details = False, {"error": f"{type(exc).__name__}: {exc}"}
    body = json.dumps({"status": "ok" if ok else "unavailable", **details}, default=str).encode()
    return (200 if ok else 503), body, "application/json"
