"""Every service runs the same way: it starts, answers /health, reports its status, stops on SIGTERM with exit 0
after a final "stopped" status, and exits 1 with the crash in its last log line when a task of its fails.

One test over all seven (the six of the design card and the audit): each runs under the one runner, so what an
operator sees of one service holds for every other.
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from shared.control import ServiceStatus, read_statuses
from shared.localkafka import KafkaCluster
from tests.support.crash_injection import ENV as CRASH_AFTER
from tests.support.kafka_io import make_topic
from tests.support.mm2_config import write_mm2_config
from tests.support.service_process import ServiceProcess

SERVICES = {  # package -> the name it reports its status under
    "data_mirror": "data-mirror",
    "topic_sync": "topic-sync",
    "acl_sync": "acl-sync",
    "checkpoint": "checkpoint",
    "heartbeat": "heartbeat",
    "audit": "audit",
    "offset_translator": "offset-translator",
}
START_S = 180  # data-mirror starts Spark; the slowest start on a busy 2-core CI machine


def _statuses(cluster: KafkaCluster, service: str, instance: str) -> list[ServiceStatus]:
    return [
        status
        for status in read_statuses(cluster.client_properties()).values()
        if status.service == service and status.instance.startswith(instance)
    ]


def _wait_for_status(cluster: KafkaCluster, service: str, instance: str, states: set[str]) -> ServiceStatus:
    deadline = time.monotonic() + START_S
    while True:
        found = [s for s in _statuses(cluster, service, instance) if s.state in states]
        if found:
            return found[0]
        assert time.monotonic() < deadline, f"{service} reported no status in {sorted(states)}"
        time.sleep(0.5)


def _health_port(process: ServiceProcess) -> int:
    """The runner's /health port, or the translator's API port (its probes are routes of the API)."""
    started = process.wait_for_log("service_started", timeout_s=START_S)
    starting = process.wait_for_log("service_starting", timeout_s=5)
    port = starting.get("metrics_port") or started.get("port")
    assert isinstance(port, int), (starting, started)
    return port


@pytest.mark.parametrize("package", sorted(SERVICES))
def test_each_service_starts_reports_stops_on_sigterm_and_exits_1_on_a_crash(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path, package: str
) -> None:
    service = SERVICES[package]
    topic = f"life-{unique}"
    make_topic(cluster_a.client_properties(), topic, 1)
    config = write_mm2_config(
        tmp_path / "mm2.properties",
        {"A": cluster_a, "B": cluster_b},
        {"A->B": {"topics": topic, "groups": f"life-{unique}-.*"}},
    )
    instance = f"life-{unique}-{package}"
    port_args = ("--port", "0") if package == "offset_translator" else ()
    args = ("--instance-id", instance, *port_args)

    process = ServiceProcess(package, config, tmp_path, *args).start()
    try:
        port = _health_port(process)
        _wait_for_status(cluster_b, service, instance, {"starting", "running", "degraded"})
        assert httpx.get(f"http://127.0.0.1:{port}/health", timeout=10).status_code == 200
        code = process.stop()
    finally:
        process.kill()
    assert code == 0, process.tail()
    last = process.logs()[-1]
    assert (last["event"], last.get("crashed")) == ("service_stopped", None), process.tail()
    assert any(entry.get("event") == "stop_requested" and entry.get("signal") == "SIGTERM" for entry in process.logs())
    stopped = _statuses(cluster_b, service, instance)
    assert stopped, f"{service}: no status"
    assert {status.state for status in stopped} == {"stopped"}, stopped

    crashing = ServiceProcess(package, config, tmp_path, *args, env={CRASH_AFTER: "2"})
    crashing.command[2:3] = ["tests.support.crash_injection", f"services.{package}"]
    crashing.start()
    try:
        crashing.wait_for_log("service_started", timeout_s=START_S)
        assert crashing.popen is not None
        code = crashing.popen.wait(timeout=START_S)
    finally:
        crashing.kill()
    assert code == 1, crashing.tail()
    last = crashing.logs()[-1]
    assert last["event"] == "service_stopped", crashing.tail()
    assert "injected by the test" in (last.get("crashed") or ""), last
