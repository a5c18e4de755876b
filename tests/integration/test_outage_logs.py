"""An outage is readable: with its cluster's broker killed, a service logs the outage once and the client
libraries' lines at most once a minute per cause (with how many were left out), from every process it runs.

data-mirror is the service: its driver's aiokafka and librdkafka clients, and the aiokafka and librdkafka
clients of its Spark workers (whose stderr the driver relays), all log the outage. Before the repeat limiter
counted by cause and the workers logged through it, 60 s of this outage wrote 4,319 lines (2,820 'Unable connect
to node with id 1', 1,412 'Unable to update metadata', passed on from the workers as plain text).
"""

from __future__ import annotations

import collections
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from shared.localkafka import KafkaCluster
from shared.log_repeats import cause_of
from tests.support.kafka_io import consume_all, make_topic, produce
from tests.support.mm2_config import write_mm2_config
from tests.support.service_process import ServiceProcess

pytestmark = pytest.mark.slow
WATCH_S = 75  # past one window: each cause's second line, with `repeated`, is due
CLIENT_LOGGERS = ("aiokafka", "kafka", "librdkafka")


@pytest.fixture
def doomed_cluster(kafka_runtime: str) -> Iterator[KafkaCluster]:
    """A cluster of this test's own: its broker is killed under the running service."""
    cluster = KafkaCluster("DOWN")
    try:
        yield cluster.start()
    finally:
        cluster.stop()


def test_with_the_broker_killed_each_client_cause_is_logged_at_most_once_a_minute(
    doomed_cluster: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    props = doomed_cluster.client_properties()
    topic = f"outage-{unique}"
    make_topic(props, topic, 2)
    make_topic(props, f"A.{topic}", 2)
    produce(props, topic, [(None, f"v{i}".encode()) for i in range(20)])
    config = write_mm2_config(
        tmp_path / "mm2.properties", {"A": doomed_cluster, "B": doomed_cluster}, {"A->B": {"topics": topic}}
    )
    with ServiceProcess("data_mirror", config, tmp_path) as mirror:
        mirror.wait_for_log("task_started", timeout_s=180)
        assert len(consume_all(props, f"A.{topic}", 20, timeout_s=120)) == 20
        before = len(mirror.logs())
        for node in doomed_cluster.nodes:
            node.process.kill()
        time.sleep(WATCH_S)
        during = mirror.logs()[before:]
        mirror.kill()

    client = [entry for entry in during if str(entry.get("logger", "")).startswith(CLIENT_LOGGERS)]
    per_cause = collections.Counter((entry["logger"], cause_of(str(entry["event"]))) for entry in client)
    report = "\n".join(f"{count:5} {logger}: {cause[:140]}" for (logger, cause), count in per_cause.most_common())
    print(f"\n{len(during)} log lines in {WATCH_S}s of outage, {len(client)} from client libraries:\n{report}")
    assert client, "the client libraries said nothing of the outage"
    assert max(per_cause.values()) <= 2, report  # the first, then one a minute
    assert any(entry.get("repeated") for entry in client), report  # the minute's line says how many it stands for
    # Nothing of the clients' comes through as plain text (a worker's lines before it logged JSON).
    plain = [entry for entry in during if entry.get("logger") == "stderr" and "Unable" in str(entry.get("event"))]
    assert not plain, plain[:3]
    # The service's own event: the outage, once per cluster alias it watches.
    unreachable = [entry for entry in during if entry.get("event") == "cluster_unreachable"]
    assert {entry["cluster"] for entry in unreachable} == {"A", "B"}, report
    assert len(unreachable) == 2
