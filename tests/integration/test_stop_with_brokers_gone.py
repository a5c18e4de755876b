"""SIGTERM after every broker is gone: data-mirror and the translator exit cleanly without waiting for the target.

An operator stopping Strait during a cluster outage (or a Kubernetes node drain after one) must not wait out
client timeouts or the 60 s hand-over bound: nothing can be committed to a cluster that does not answer, so there is
nothing to wait for. The test checks what the services did (cancelled the tasks because the target did not
acknowledge, dropped the final control records) rather than a wall-clock bound, which a loaded machine stretches
(5-6 s idle, 12.5 s once in CI); the seconds are printed.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from shared.localkafka import KafkaCluster
from shared.localkafka.ports import free_port
from tests.support.kafka_io import consume_all, make_topic, produce
from tests.support.mm2_config import write_mm2_config
from tests.support.service_process import ServiceProcess

pytestmark = pytest.mark.slow
# Past this, a service is still running and the test fails: well beyond the 60 s a reachable task gets to hand over.
GIVE_UP_S = 120


@pytest.fixture
def doomed_cluster(kafka_runtime: str) -> Iterator[KafkaCluster]:
    """A cluster of this test's own: it is stopped under running services."""
    cluster = KafkaCluster("GONE")
    try:
        yield cluster.start()
    finally:
        cluster.stop()


def test_sigterm_with_every_broker_gone_exits_cleanly_without_waiting_for_the_target(
    doomed_cluster: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    props = doomed_cluster.client_properties()
    topic = f"gone-{unique}"
    make_topic(props, topic, 2)
    make_topic(props, f"A.{topic}", 2)
    produce(props, topic, [(None, f"v{i}".encode()) for i in range(50)])
    config = write_mm2_config(
        tmp_path / "mm2.properties", {"A": doomed_cluster, "B": doomed_cluster}, {"A->B": {"topics": topic}}
    )
    port = free_port()
    with (
        ServiceProcess("data_mirror", config, tmp_path, env={"STRAIT_COMMIT_INTERVAL_MS": "300"}) as mirror,
        ServiceProcess("offset_translator", config, tmp_path, "--port", str(port)) as translator,
    ):
        mirror.wait_for_log("task_started", timeout_s=180)
        assert len(consume_all(props, f"A.{topic}", 50, timeout_s=120)) == 50
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5) as client:
            deadline = time.monotonic() + 60
            while client.get("/ready").status_code != 200:
                assert time.monotonic() < deadline, translator.tail()
                time.sleep(0.2)

        doomed_cluster.stop()
        time.sleep(3)  # the services notice: connections refused, requests failing
        exits = sigterm_all({"data-mirror": mirror, "translator": translator}, give_up_s=GIVE_UP_S)
    print(f"\nexit code and seconds after SIGTERM with every broker gone: {exits}")
    tails = "\n".join(timeline(service) for service in (mirror, translator))
    assert {name: code for name, (code, _) in exits.items()} == {"data-mirror": 0, "translator": 0}, tails
    mirror_events = mirror.logs()
    # The hand-over request was not acknowledged, so every task was cancelled at once, none after a wait.
    cancelled = [e for e in mirror_events if e.get("event") == "task_cancelled"]
    assert cancelled, tails
    assert all(e.get("reason") == "target unreachable" for e in cancelled), tails
    assert any(e.get("event") == "driver_stopped" for e in mirror_events), tails
    translator_events = {e.get("event") for e in translator.logs()}
    assert {"final_status_not_published", "service_stopped"} <= translator_events, tails


def sigterm_all(services: dict[str, ServiceProcess], give_up_s: float) -> dict[str, tuple[int | None, float]]:
    """SIGTERM every service at once; each one's exit code and seconds to exit (None: still running)."""
    began = time.monotonic()
    for service in services.values():
        assert service.popen is not None
        service.popen.send_signal(signal.SIGTERM)
    exits: dict[str, tuple[int | None, float]] = {}
    while len(exits) < len(services) and time.monotonic() - began < give_up_s:
        for name, service in services.items():
            assert service.popen is not None
            if name not in exits and service.popen.poll() is not None:
                exits[name] = (service.popen.returncode, round(time.monotonic() - began, 1))
        time.sleep(0.1)
    for name in services:
        exits.setdefault(name, (None, give_up_s))
    return exits


def timeline(service: ServiceProcess) -> str:
    """The service's own log events (client libraries' connection noise left out), for a failure message."""
    lines = [
        f"{entry.get('timestamp', '')[11:23]} {entry.get('logger', '')}: {str(entry.get('event', ''))[:160]}"
        for entry in service.logs()
        if not str(entry.get("logger", "")).startswith(("librdkafka", "aiokafka", "org.apache.spark"))
        and not str(entry.get("event", "")).startswith(("Unable connect to node", "Unable to update metadata"))
    ]
    return "\n".join(lines[-60:])
