"""Entry point of `strait-data-mirror`: the common runner around the PySpark driver."""

from __future__ import annotations

from collections.abc import Sequence

from prometheus_client import CollectorRegistry

from services.data_mirror.driver import MirrorDriver
from services.data_mirror.driver_service import DriverService
from services.data_mirror.settings import PROG, DataMirrorSettings
from services.data_mirror.spark_session import spark_conf
from shared.config import MirrorMakerConfig
from shared.errors import ConfigError
from shared.flow_selection import selected_flows
from shared.reshape.python_transforms import check_functions
from shared.runner import run_service


def build(settings: DataMirrorSettings, config: MirrorMakerConfig, registry: CollectorRegistry) -> DriverService:
    """The driver for the served flows; what Spark or a Python transform would refuse is refused before it starts."""
    try:
        flows = list(selected_flows(config, settings.flows))
        spark_conf(config.top_level, settings.spark_master)
        for flow in flows:
            check_functions(flow.transforms)  # a Python transform that cannot be imported stops the service here
    except ConfigError as exc:
        raise ConfigError(f"config {settings.config}: {exc}", key=exc.key, value=exc.value) from exc
    return DriverService(MirrorDriver(settings, config, flows, registry), settings.status_interval_s)


def main(argv: Sequence[str] | None = None) -> None:
    """Run the driver until SIGTERM/SIGINT; exit 2 on bad settings or config, 1 if it failed."""
    run_service(PROG, build, DataMirrorSettings, argv)


if __name__ == "__main__":
    main()
