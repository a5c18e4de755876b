"""Every service's Prometheus registry: its own metrics, plus what dashboards and alerts for any process expect
(`process_*` CPU, memory and file descriptors, `python_gc_*`, `python_info`) and `strait_build_info`, which says
which version of which service answers (a rollout half done shows as two versions)."""

from __future__ import annotations

import platform
from importlib.metadata import PackageNotFoundError, version

from prometheus_client import CollectorRegistry, Info
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector


def strait_version() -> str:
    """The installed package's version ('unknown' when run from a tree that was never installed)."""
    try:
        return version("strait")
    except PackageNotFoundError:
        return "unknown"


def service_registry(service: str) -> CollectorRegistry:
    """A registry with the standard process, platform and GC collectors and the build info of `service`."""
    registry = CollectorRegistry()
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    build = Info("strait_build", "the running Strait build", registry=registry)
    build.info({"version": strait_version(), "service": service, "python": platform.python_version()})
    return registry
