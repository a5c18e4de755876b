"""Run the app under uvicorn inside `asyncio.run`: SIGTERM/SIGINT ask uvicorn to stop, which drains requests,
then the lifespan stops the feeds; a crashed feed stops the server too and makes the exit code non-zero."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import time
from collections.abc import Callable, Iterator

import structlog
import uvicorn
from fastapi import FastAPI

from services.offset_translator.service import TranslatorService
from services.offset_translator.settings import TranslatorSettings
from shared.daemon_executor import use_daemon_threads

EXIT_CRASHED = 1


class _Server(uvicorn.Server):
    """uvicorn without its own signal handling (`serve` installs ours on the loop instead), saying
    `service_started` only once it accepts connections (the app's startup runs before the port is bound)."""

    def __init__(self, config: uvicorn.Config, on_started: Callable[[], None]) -> None:
        super().__init__(config)
        self._on_started = on_started

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # uvicorn would re-raise SIGTERM after shutting down, killing the process before the summary line.
        yield

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            self._on_started()


async def serve(app: FastAPI, settings: TranslatorSettings, prog: str) -> int:
    """Serve until SIGTERM/SIGINT or a crashed feed; 0 after a clean stop, 1 after a crash or failed start."""
    log = structlog.get_logger(prog)
    server = _Server(
        uvicorn.Config(
            app,
            host=settings.host,
            port=settings.port,
            log_config=None,
            lifespan="on",
            access_log=False,
            timeout_graceful_shutdown=10,
            # (the settings checked that they load; uvicorn's default protocol negotiates TLS 1.2 or newer)
            ssl_certfile=str(settings.tls_cert_file) if settings.tls_cert_file is not None else None,
            ssl_keyfile=str(settings.tls_key_file) if settings.tls_key_file is not None else None,
        ),
        lambda: log.info(
            "service_started",
            instance=settings.instance_id,
            host=settings.host,
            port=settings.port,
            scheme="https" if settings.tls_cert_file is not None else "http",
        ),
    )
    loop = asyncio.get_running_loop()
    use_daemon_threads(loop)

    def request_stop() -> None:
        server.should_exit = True

    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, request_stop)
    service: TranslatorService | None = app.state.service
    watcher = asyncio.create_task(_stop_on_crash(service, server)) if service is not None else None
    started = time.monotonic()
    log.info("service_starting", instance=settings.instance_id, host=settings.host, port=settings.port)
    try:
        await server.serve()
    finally:
        if watcher is not None:
            watcher.cancel()
    crashed = service.crashed if service is not None else None
    log.info(
        "service_stopped",
        instance=settings.instance_id,
        uptime_s=round(time.monotonic() - started, 1),
        crashed=repr(crashed) if crashed else None,
    )
    return EXIT_CRASHED if crashed is not None or not server.started else 0


async def _stop_on_crash(service: TranslatorService, server: uvicorn.Server) -> None:
    """A crashed background task requests a stop; then stop serving too."""
    await service.run_until_stopped()
    server.should_exit = True
