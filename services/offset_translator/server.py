"""The translator's HTTP server as a service under the common runner.

uvicorn serves the app; its lifespan starts and stops the feeds that fill the index. A stop request (SIGTERM, via
the runner) asks uvicorn to stop, which drains requests and then runs the lifespan's shutdown; a crashed feed, or a
server that cannot bind its port, crashes this service, so the process exits non-zero.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Iterator
from typing import Any

import uvicorn
from fastapi import FastAPI

from services.offset_translator.service import TranslatorService
from services.offset_translator.settings import TranslatorSettings
from shared.errors import StraitError
from shared.service import Service

GRACEFUL_S = 10  # requests in flight at a stop get this long to finish
BIND_POLL_S = 0.02


class _Server(uvicorn.Server):
    """uvicorn without its own signal handling: the runner's handlers ask this service to stop."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # uvicorn would re-raise SIGTERM after shutting down, killing the process before the summary line.
        yield


class TranslatorServer(Service):
    """Serves the app until stopped; `start` returns once the port accepts connections."""

    name = "offset-translator"
    serves_own_http = True  # /metrics, /health and /ready are routes of the app, on the API port
    tune_gc = False  # it answers requests from an index; the thresholds were measured for record-handling loops

    def __init__(self, app: FastAPI, settings: TranslatorSettings) -> None:
        super().__init__()
        self._settings = settings
        self._feeds: TranslatorService | None = app.state.service
        self._server = _Server(
            uvicorn.Config(
                app,
                host=settings.host,
                port=settings.port,
                log_config=None,
                lifespan="on",
                access_log=False,
                timeout_graceful_shutdown=GRACEFUL_S,
                # (the settings checked that they load; uvicorn's default protocol negotiates TLS 1.2 or newer)
                ssl_certfile=str(settings.tls_cert_file) if settings.tls_cert_file is not None else None,
                ssl_keyfile=str(settings.tls_key_file) if settings.tls_key_file is not None else None,
            )
        )
        self._serving: asyncio.Task[None] | None = None

    def listening(self) -> dict[str, Any]:
        scheme = "https" if self._settings.tls_cert_file is not None else "http"
        return {"host": self._settings.host, "port": self.port, "scheme": scheme}

    @property
    def _address(self) -> str:
        return f"{self._settings.host}:{self._settings.port}"

    @property
    def port(self) -> int:
        """The bound port (the setting's, or the one picked for port 0 once serving)."""
        for server in getattr(self._server, "servers", []):
            for sock in server.sockets:
                if sock.family in (socket.AF_INET, socket.AF_INET6):
                    return int(sock.getsockname()[1])
        return self._settings.port

    async def on_start(self) -> None:
        """Serve in the background; wait until the port is bound (the app's startup runs first) or serving failed."""
        self._serving = self.spawn(self._serve(), "http")
        while not self._server.started and not self._serving.done():
            await asyncio.sleep(BIND_POLL_S)
        if not self._server.started:  # the port was not bound, or the app's startup failed: never "started"
            failure = self._serving.exception() if self._serving.done() else None
            raise failure or self.crashed or StraitError(f"the HTTP server on {self._address} did not start")
        if self._feeds is not None:
            self.spawn(self._watch_feeds(self._feeds), "feeds")

    async def _serve(self) -> None:
        try:
            await self._server.serve()
        except SystemExit as exc:  # uvicorn exits the process when it cannot bind or the app cannot start
            raise StraitError(f"the HTTP server on {self._address} could not start (see the line before)") from exc
        if not self.stopping:
            raise StraitError(f"the HTTP server on {self._address} stopped or never started")

    async def _watch_feeds(self, feeds: TranslatorService) -> None:
        """A crashed feed crashes the server (the index would go stale while answering)."""
        await feeds.run_until_stopped()
        if feeds.crashed is not None and not self.stopping:
            raise StraitError(f"a feed of the index crashed: {feeds.crashed!r}")

    async def before_cancel(self) -> None:
        """Drain requests in flight, then the lifespan stops the feeds."""
        self._server.should_exit = True
        if self._serving is not None:
            with contextlib.suppress(Exception):
                await self._serving

    async def on_stop(self) -> None:
        """A feed that crashed at any moment (even while stopping) makes the process exit non-zero."""
        if self.crashed is None and self._feeds is not None and self._feeds.crashed is not None:
            self.crashed = self._feeds.crashed
