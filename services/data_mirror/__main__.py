"""Entry point of `strait-data-mirror`: settings, config, logging, signals, metrics, then the driver loop."""

from __future__ import annotations

import signal
import sys
from types import FrameType

import structlog

from services.data_mirror.driver import MirrorDriver
from services.data_mirror.settings import DataMirrorSettings
from services.data_mirror.spark_session import spark_conf
from services.data_mirror.transforms import check_functions
from shared.errors import ConfigError
from shared.flow_selection import selected_flows
from shared.metrics_registry import service_registry
from shared.native_output import relay_native_stderr
from shared.observability import ObservabilityServer, configure_logging
from shared.runner import EXIT_CRASHED, fail, load_config, parse_settings

PROG = "strait-data-mirror"


def main() -> None:
    """Run the driver until SIGTERM/SIGINT; exit non-zero if it failed."""
    settings = parse_settings(PROG, DataMirrorSettings, None)
    configure_logging(PROG, settings.log_level)
    relay_native_stderr()
    config = load_config(PROG, settings)
    try:
        flows = list(selected_flows(config, settings.flows))
    except ConfigError as exc:
        fail(PROG, f"config {settings.config}: {exc}")
    try:
        spark_conf(config.top_level, settings.spark_master)  # refused before anything starts
        for flow in flows:
            check_functions(flow.transforms)  # a Python transform that cannot be imported stops the service here
    except ConfigError as exc:
        fail(PROG, f"config {settings.config}: {exc}")
    registry = service_registry(PROG)
    driver = MirrorDriver(settings, config, flows, registry)

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        structlog.get_logger(PROG).info("stop_requested", signal=signal.Signals(signum).name)
        driver.request_stop()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    server = ObservabilityServer(
        registry,
        live=driver.liveness,
        ready=driver.readiness,
        host=settings.metrics_host,
        port=settings.metrics_port,
    )
    server.start()
    try:
        driver.run()
    except Exception as exc:
        structlog.get_logger(PROG).error("driver_failed", error=str(exc), exc_info=exc)
        sys.exit(EXIT_CRASHED)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
