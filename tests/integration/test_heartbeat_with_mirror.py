"""Heartbeats through the real data-mirror: the flow is live while it runs and reported stalled when it stops."""

from __future__ import annotations

import time
from pathlib import Path

from shared.control import ServiceStatus, read_statuses
from shared.localkafka import KafkaCluster
from tests.support.mm2_config import write_mm2_config
from tests.support.service_process import ServiceProcess


def _heartbeat_status(cluster: KafkaCluster, instance: str) -> ServiceStatus | None:
    statuses = read_statuses(cluster.client_properties())
    mine = [s for s in statuses.values() if s.service == "heartbeat" and s.instance.startswith(instance)]
    return mine[0] if mine else None


def _wait_for_state(cluster: KafkaCluster, instance: str, state: str, timeout_s: float) -> ServiceStatus:
    deadline = time.monotonic() + timeout_s
    status = None
    while time.monotonic() < deadline:
        status = _heartbeat_status(cluster, instance)
        if status is not None and status.state == state:
            return status
        time.sleep(1)
    raise AssertionError(f"heartbeat status never became {state!r}; last: {status}")


def test_stopping_data_mirror_turns_the_flow_stalled(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    source, target = f"S{unique}", f"T{unique}"  # own aliases: own heartbeat keys and remote topic
    config = write_mm2_config(
        tmp_path / "mm2.properties",
        {source: cluster_a, target: cluster_b},
        {f"{source}->{target}": {"topics": "heartbeats"}},
    )
    instance = f"hb-{unique}"
    heartbeat = ServiceProcess("heartbeat", config, tmp_path, "--instance-id", instance).start()
    topic_sync = ServiceProcess("topic_sync", config, tmp_path).start()
    mirror = ServiceProcess("data_mirror", config, tmp_path).start()
    try:
        live = _wait_for_state(cluster_b, instance, "running", timeout_s=180)
        assert live.details.get("liveness") == "live", live.details
        mirror.kill()
        stalled = _wait_for_state(cluster_b, instance, "degraded", timeout_s=60)
        assert stalled.details.get("reason") == "stalled", stalled.details
    finally:
        for process in (mirror, topic_sync, heartbeat):
            process.kill()
