"""The entry point every asyncio service shares: settings, config, logging, signals, metrics, exit code."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, TypeVar

import structlog
from prometheus_client import CollectorRegistry
from pydantic import ValidationError

from shared.config import MirrorMakerConfig, is_sensitive_key, load_mm2_config
from shared.config.redaction import one_line
from shared.config.service_settings import CliFlag, ServiceSettings
from shared.daemon_executor import use_daemon_threads
from shared.errors import ConfigError
from shared.gc_monitor import GcPauseMonitor
from shared.gc_tuning import tune_garbage_collector
from shared.kafka.client_names import name_process
from shared.kafka.client_props import jaas_credentials
from shared.loop_monitor import LoopStallMonitor
from shared.loop_watchdog import LoopWatchdog
from shared.metrics_registry import service_registry
from shared.native_output import relay_native_stderr
from shared.observability import ObservabilityServer, configure_logging, register_secrets
from shared.service import Service

S = TypeVar("S", bound=ServiceSettings)
EXIT_CONFIG = 2
EXIT_CRASHED = 1


COMMON_FLAGS = (
    CliFlag("--config", "MM2-format properties file (env STRAIT_CONFIG)"),
    CliFlag("--metrics-host", "address for /metrics, /health, /ready"),
    CliFlag("--metrics-port", "port for /metrics, /health, /ready (0: any free)", type=int),
    CliFlag("--instance-id", "this process's name in status and leases"),
    CliFlag("--log-level", "DEBUG, INFO, WARNING, ERROR"),
    CliFlag("--flows", "comma list of flows to serve, e.g. A->B (default: all enabled)"),
)


def parse_settings(prog: str, settings_cls: type[S], argv: Sequence[str] | None) -> S:
    """Command-line flags over STRAIT_* environment variables over defaults; one-line error on bad input."""
    description = f"Strait {settings_cls.cli_description or prog + ' service'}"
    parser = argparse.ArgumentParser(prog=prog, description=description)
    for flag in (*COMMON_FLAGS, *settings_cls.cli_flags):
        hidden = flag.help is None or flag.flag in settings_cls.cli_hidden
        parser.add_argument(flag.flag, dest=flag.dest, type=flag.type, help=argparse.SUPPRESS if hidden else flag.help)
    args = parser.parse_args(argv)
    given = {key: value for key, value in vars(args).items() if value is not None}
    try:
        return settings_cls(**given)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        message = first["msg"].removeprefix("Value error, ")
        hint = " (use --config or STRAIT_CONFIG)" if where == "config" else ""
        fail(prog, f"setting {where}: {message}{hint}" if where else message)


def fail(prog: str, message: str) -> NoReturn:
    """Print one line naming the problem and exit with the configuration error code."""
    print(f"{prog}: error: {one_line(message)}", file=sys.stderr)
    raise SystemExit(EXIT_CONFIG)


def load_config(prog: str, settings: ServiceSettings) -> MirrorMakerConfig:
    """Load and validate the MM2 config, registering its secrets for log masking."""
    try:
        config = load_mm2_config(settings.config)
    except ConfigError as exc:
        fail(prog, f"config {settings.config}: {exc}")
    register_secrets(_secret_values(config))
    return config


def _secret_values(config: MirrorMakerConfig) -> list[str]:
    """Every resolved secret in the config: sensitive keys' values and the passwords inside JAAS lines."""
    values: list[str] = []
    for cluster in config.clusters.values():
        for props in (cluster.consumer_props(), cluster.producer_props(), cluster.admin_props()):
            for key, value in props.items():
                if is_sensitive_key(key):
                    values.append(value)
                if key == "sasl.jaas.config":
                    with contextlib.suppress(ConfigError):
                        values.append(jaas_credentials(value)[1])
    return values


def run_service(
    prog: str,
    build: Callable[[S, MirrorMakerConfig, CollectorRegistry], Service],
    settings_cls: type[S],
    argv: Sequence[str] | None = None,
) -> None:
    """Parse, configure, run until SIGTERM/SIGINT, stop cleanly; exit non-zero if a task crashed."""
    settings = parse_settings(prog, settings_cls, argv)
    name_process(prog)
    configure_logging(prog, settings.log_level)
    relay_native_stderr()
    config = load_config(prog, settings)
    code = asyncio.run(_serve(prog, settings, config, build))
    raise SystemExit(code)


async def _serve(
    prog: str,
    settings: S,
    config: MirrorMakerConfig,
    build: Callable[[S, MirrorMakerConfig, CollectorRegistry], Service],
) -> int:
    log = structlog.get_logger(prog)
    registry = service_registry(prog)
    try:
        service = build(settings, config, registry)
    except ConfigError as exc:
        fail(prog, str(exc))
    if service.tune_gc:
        tune_garbage_collector()
    loop = asyncio.get_running_loop()
    use_daemon_threads(loop)
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, _stop_on(signum, service, log))
    server: ObservabilityServer | None = None
    listening = service.listening()
    if not service.serves_own_http:  # the translator answers /metrics, /health and /ready on its API port
        server = ObservabilityServer(
            registry,
            live=service.liveness,
            ready=service.readiness,
            host=settings.metrics_host,
            port=settings.metrics_port,
        )
        server.start()
        listening = {"metrics_port": server.port}
    monitor = LoopStallMonitor(registry)
    stalls = asyncio.create_task(monitor.run(), name="loop-stall-monitor")
    watchdog = asyncio.create_task(LoopWatchdog().run(), name="loop-watchdog")
    collections = GcPauseMonitor(registry).install()
    started = time.monotonic()
    log.info("service_starting", instance=settings.instance_id, **listening)
    try:
        await service.start()
        log.info("service_started", instance=settings.instance_id, **service.listening())
        await service.run_until_stopped()
    except Exception as exc:
        service.crashed = service.crashed or exc
        log.error("service_failed", error=str(exc), exc_info=exc)
    finally:
        await service.stop()
        if server is not None:
            server.stop()
        stalls.cancel()
        watchdog.cancel()
        collections.uninstall()
    log.info(
        "service_stopped",
        instance=settings.instance_id,
        uptime_s=round(time.monotonic() - started, 1),
        longest_loop_stall_ms=round(monitor.worst_s * 1000, 1),
        longest_loop_held_ms=round(monitor.worst_held_s * 1000, 1),
        longest_gc_pause_ms=round(collections.worst_s * 1000, 1),
        crashed=repr(service.crashed) if service.crashed else None,
    )
    return EXIT_CRASHED if service.crashed else 0


def _stop_on(signum: int, service: Service, log: Any) -> Callable[[], None]:
    """What SIGTERM/SIGINT do: ask the service to stop (it drains, commits and closes), saying which signal."""

    def stop() -> None:
        log.info("stop_requested", signal=signal.Signals(signum).name)
        service.request_stop()

    return stop
