"""heartbeat on real clusters: MM2's heartbeat bytes on each cluster, liveness and stall reporting, SIGTERM.

tests/support/mirror_sim.py copies `heartbeats` from the source to `<source>.heartbeats` on the target while
the test wants the flow live, then stops copying. Aliases are unique per test (the heartbeat keys and the
mirrored topic name carry them); `heartbeats` itself is shared by every test on a cluster.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

from confluent_kafka.admin import ConfigResource, ResourceType
from prometheus_client import CollectorRegistry

from services.heartbeat.service import HeartbeatService, build
from services.heartbeat.settings import HeartbeatSettings
from shared.config import load_mm2_config
from shared.control import ServiceStatus, read_statuses
from shared.kafka.factories import confluent_admin
from shared.kafka.partition_reader import read_to_end
from shared.localkafka import KafkaCluster
from shared.records import Heartbeat
from tests.support.mirror_sim import MirrorSimulation
from tests.support.mm2_config import write_mm2_config
from tests.support.service_process import ServiceProcess


def _encode(alias: str) -> bytes:
    return len(alias).to_bytes(2, "big") + alias.encode()


def _heartbeats(props: dict[str, str], topic: str, source: str, target: str) -> list[tuple[bytes, bytes]]:
    """Raw (key, value) of the records in `topic` keyed (source, target)."""
    key = _encode(source) + _encode(target)
    return [
        (record.key, record.value)
        for record in read_to_end(props, topic)
        if record.key == key and record.value is not None
    ]


def _topic_shape(props: dict[str, str], topic: str) -> tuple[int, str]:
    admin = confluent_admin(props)
    partitions = len(admin.list_topics(topic, timeout=10).topics[topic].partitions)
    resource = ConfigResource(ResourceType.TOPIC, topic)
    configs = admin.describe_configs([resource])[resource].result(timeout=10)
    return partitions, configs["cleanup.policy"].value


async def _wait_for(predicate: Callable[[], bool], timeout_s: float = 60, what: str = "condition") -> None:
    try:
        async with asyncio.timeout(timeout_s):
            while not await asyncio.to_thread(predicate):
                await asyncio.sleep(0.5)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None


def _status(props: dict[str, str], instance: str) -> ServiceStatus | None:
    return read_statuses(props).get(instance)


async def test_heartbeats_have_mm2_bytes_and_a_stalled_flow_is_reported(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    source, target = f"a{unique}", f"b{unique}"
    flow = f"{source}->{target}"
    a_props, b_props = cluster_a.client_properties(), cluster_b.client_properties()
    config = write_mm2_config(tmp_path / "mm2.properties", {source: cluster_a, target: cluster_b}, {flow: {}})
    registry = CollectorRegistry()
    settings = HeartbeatSettings(
        config=config, instance_id=f"hb-{unique}", status_interval_s=1, stall_min_s=3, stall_intervals=3
    )
    service: HeartbeatService = build(settings, load_mm2_config(config), registry)
    instance = f"hb-{unique}/{flow}"
    mirror = MirrorSimulation(a_props, b_props, source_alias=source, target_alias=target)
    copying = asyncio.Event()
    copying.set()

    async def copy_heartbeats() -> None:
        while copying.is_set():
            await asyncio.to_thread(mirror.mirror, "heartbeats", compacted=True)
            await asyncio.sleep(0.5)

    async with service:
        # MM2's pair B->A writes Heartbeat(B, A) into `heartbeats` on A; the pair A->B writes (A, B) on B.
        await _wait_for(lambda: len(_heartbeats(a_props, "heartbeats", target, source)) >= 2, what="heartbeats on A")
        await _wait_for(lambda: bool(_heartbeats(b_props, "heartbeats", source, target)), what="heartbeats on B")
        assert _topic_shape(a_props, "heartbeats") == (1, "compact")
        key, value = _heartbeats(a_props, "heartbeats", target, source)[-1]
        assert key == _encode(target) + _encode(source)
        assert len(value) == 10
        assert value[:2] == b"\x00\x00"  # version 0, then the INT64 timestamp
        sent_ms = int.from_bytes(value[2:], "big", signed=True)
        assert abs(sent_ms - time.time() * 1000) < 60_000
        assert Heartbeat.decode(key, value) == Heartbeat(target, source, sent_ms)

        copier = asyncio.create_task(copy_heartbeats())
        try:

            def live() -> bool:
                status = _status(b_props, instance)
                return status is not None and status.state == "running" and status.details["liveness"] == "live"

            await _wait_for(live, what="flow reported live")
            assert registry.get_sample_value("strait_flow_stalled", {"flow": flow}) == 0
            assert (registry.get_sample_value("strait_heartbeat_latency_ms_count", {"flow": flow}) or 0) > 0
        finally:
            copying.clear()
            await copier

        def stalled() -> bool:
            status = _status(b_props, instance)
            return status is not None and status.state == "degraded" and status.details.get("reason") == "stalled"

        await _wait_for(stalled, timeout_s=30, what="flow reported stalled")
        assert registry.get_sample_value("strait_flow_stalled", {"flow": flow}) == 1
        status = _status(b_props, instance)
        assert status is not None
        assert status.details["heartbeats_topic"] == f"{source}.heartbeats"
        assert status.details["heartbeat_age_s"] >= 3
    final = _status(b_props, instance)
    assert final is not None
    assert final.state == "stopped"


def test_service_process_stops_on_sigterm_with_a_final_status(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    source, target = f"a{unique}", f"b{unique}"
    flow = f"{source}->{target}"
    a_props, b_props = cluster_a.client_properties(), cluster_b.client_properties()
    config = write_mm2_config(tmp_path / "mm2.properties", {source: cluster_a, target: cluster_b}, {flow: {}})
    instance = f"proc-{unique}"
    with ServiceProcess("heartbeat", config, tmp_path, "--instance-id", instance) as process:
        deadline = time.monotonic() + 60
        while len(_heartbeats(a_props, "heartbeats", target, source)) < 2:
            assert time.monotonic() < deadline, process.tail()
            time.sleep(0.5)
        code = process.stop()
    assert code == 0, process.tail()
    status = _status(b_props, f"{instance}/{flow}")
    assert status is not None
    assert (status.service, status.state) == ("heartbeat", "stopped")
