"""The whole source cluster freezes for a minute (SIGSTOP on every broker of A, then SIGCONT) under the real
services: each one says so in its status while it lasts, naming cluster A, and each recovers by itself
afterwards (same processes): records written after the outage are mirrored, checkpoints advance, heartbeats
flow again, and no record is lost.
"""

from __future__ import annotations

import contextlib
import re
import signal
import time
from collections.abc import Callable, Iterator, Mapping
from functools import partial
from pathlib import Path

import httpx
import pytest
from confluent_kafka import TopicPartition

from shared.control import ServiceStatus, read_statuses
from shared.kafka.factories import confluent_consumer
from shared.localkafka import KafkaCluster
from shared.localkafka.ports import free_port
from tests.support.kafka_io import commit_retrying, make_topic, produce
from tests.support.mm2_config import write_mm2_config
from tests.support.replica_check import compare_topics
from tests.support.service_process import ServiceProcess
from tests.support.verify_oracle import assert_nothing_lost

pytestmark = pytest.mark.slow

OUTAGE_S = 60
PARTITIONS = 2
SERVICES = ("data_mirror", "topic_sync", "acl_sync", "checkpoint", "heartbeat", "offset_translator")
NOT_RUNNING = ("degraded", "failed")
NAMES_A = re.compile(r"\b(cluster A|on A|A unreachable)\b")


@pytest.fixture(scope="module")
def frozen_source(kafka_runtime: str) -> Iterator[KafkaCluster]:
    """A source cluster of its own: freezing it must not disturb the clusters other tests share."""
    cluster = KafkaCluster("OUT")
    try:
        yield cluster.start()
    finally:
        cluster.stop()


def _commit_group(props: Mapping[str, str], topic: str, group: str, count: int) -> dict[int, int]:
    """Consume `count` more records with `group` and commit; the committed offset per partition."""
    consumer = confluent_consumer(
        props, **{"group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False}
    )
    consumer.subscribe([topic])
    got = 0
    deadline = time.monotonic() + 60
    try:
        while got < count and time.monotonic() < deadline:
            for message in consumer.consume(num_messages=count - got, timeout=0.5):
                if message.error() is None:
                    got += 1
        assert got == count, f"the group read {got} of {count} records"
        commit_retrying(consumer)
        committed = consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10)
        return {tp.partition: tp.offset for tp in committed if tp.offset >= 0}
    finally:
        consumer.close()


def _statuses(props: Mapping[str, str], unique: str) -> dict[str, ServiceStatus]:
    """service -> the latest status of this test's instance of it (on the target's status topic)."""
    found: dict[str, ServiceStatus] = {}
    statuses = read_statuses(props, timeout_s=10)
    for service in SERVICES:
        prefix = f"{service}-{unique}"
        for instance, status in statuses.items():
            if instance.startswith(prefix) and status.flow in ("A->B", ""):
                found[service] = status
    return found


def _all_running(statuses: Mapping[str, ServiceStatus], since_ms: int) -> bool:
    """Every service published "running" after `since_ms`."""
    return set(statuses) == set(SERVICES) and all(s.ts > since_ms and s.state == "running" for s in statuses.values())


def _checkpointed(client: httpx.Client, url: str, group: str) -> dict[int, int]:
    """partition -> the upstream offset of the group's checkpoint, as the translator serves it."""
    try:
        answer = client.get(f"{url}/offsets", params={"group": group})
    except httpx.TransportError:
        return {}
    if answer.status_code != 200:
        return {}
    return {entry["partition"]: entry["upstream_offset"] for entry in answer.json()["offsets"]}


def _wait_for(
    what: str,
    check: Callable[[], bool],
    timeout_s: float,
    processes: Mapping[str, ServiceProcess],
    detail: Callable[[], object] = lambda: "",
) -> None:
    """Poll `check` until true; fail early if a service process exited, and with `detail()` on the deadline."""
    deadline = time.monotonic() + timeout_s
    while not check():
        for name, process in processes.items():
            if process.popen is None or process.popen.poll() is not None:
                raise AssertionError(f"{name} exited while waiting until {what}:\n{process.tail()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting until {what}; {detail()}")
        time.sleep(2)


def test_source_outage_is_reported_and_every_service_recovers_by_itself(
    frozen_source: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    source_props, target_props = frozen_source.client_properties(), cluster_b.client_properties()
    topic, group = f"outage-{unique}", f"outage-group-{unique}"
    make_topic(source_props, topic, partitions=PARTITIONS)
    produce(source_props, topic, [(None, f"before-{i}".encode()) for i in range(200)])
    committed = _commit_group(source_props, topic, group, 100)
    config = write_mm2_config(
        tmp_path / "mm2.properties",
        {"A": frozen_source, "B": cluster_b},
        {"A->B": {"topics": topic, "groups": group, "emit.checkpoints.interval.seconds": "1"}},
    )
    port = free_port()
    processes = {
        service: ServiceProcess(
            service,
            config,
            tmp_path,
            "--instance-id",
            f"{service}-{unique}",
            *(("--port", str(port)) if service == "offset_translator" else ()),
        )
        for service in SERVICES
    }
    url = f"http://127.0.0.1:{port}/v1/flows/A/B"
    try:
        for process in processes.values():
            process.start()
        with httpx.Client(timeout=10) as client:
            # Up and working: mirrored, checkpointed, everyone running.
            checkpointed = partial(_checkpointed, client, url, group)
            statuses = partial(_statuses, target_props, unique)
            _wait_for("the group's checkpoint", lambda: checkpointed() == committed, 240, processes, checkpointed)
            _wait_for("every service reports running", lambda: _all_running(statuses(), 0), 120, processes, statuses)

            # The outage: every broker of A frozen for a minute.
            frozen_ms = int(time.time() * 1000)
            reported: dict[str, ServiceStatus] = {}
            flow_states: set[str] = set()
            for node in frozen_source.nodes:
                node.process.send_signal(signal.SIGSTOP)
            try:
                until = time.monotonic() + OUTAGE_S
                while time.monotonic() < until:
                    for service, status in _statuses(target_props, unique).items():
                        if status.ts < frozen_ms or status.state not in NOT_RUNNING:
                            continue
                        if service not in reported or not NAMES_A.search(reported[service].last_error or ""):
                            reported[service] = status  # keep the first one that names cluster A
                    with contextlib.suppress(httpx.TransportError, ValueError, KeyError):
                        flow_states.add(client.get(f"{url}/status").json()["state"])
                    time.sleep(2)
            finally:
                for node in frozen_source.nodes:
                    node.process.send_signal(signal.SIGCONT)
            thawed_ms = int(time.time() * 1000)
            for service, status in sorted(reported.items()):
                print(f"\n{service}: {status.state}: {status.last_error}")
            assert sorted(reported) == sorted(SERVICES), f"no outage status from {set(SERVICES) - set(reported)}"
            vague = {s: r.last_error for s, r in reported.items() if not NAMES_A.search(r.last_error or "")}
            assert not vague, f"errors that do not name cluster A: {vague}"
            assert "degraded" in flow_states, f"the translator's flow status during the outage: {flow_states}"

            # After the outage: new records, new commits, and everything recovers without a restart.
            produce(source_props, topic, [(None, f"after-{i}".encode()) for i in range(200)])
            committed = _commit_group(source_props, topic, group, 200)
            _wait_for(
                "every service reports running again",
                lambda: _all_running(statuses(), thawed_ms),
                150,
                processes,
                statuses,
            )
            _wait_for("the checkpoint advances", lambda: checkpointed() == committed, 120, processes, checkpointed)
            still_failing = {s: r.last_error for s, r in statuses().items() if r.last_error}
            assert not still_failing, f"errors still reported after recovery: {still_failing}"
            _wait_for(
                "mirrored heartbeats arrive again",
                lambda: (statuses()["heartbeat"].details.get("last_heartbeat_ts") or 0) > thawed_ms,
                60,
                processes,
                statuses,
            )
            # A momentary retry after recovery (e.g. a stale leader epoch) may flip the flow briefly: wait for it.
            _wait_for(
                "the translator's flow status is running again",
                lambda: client.get(f"{url}/status").json()["state"] == "running",
                60,
                processes,
                lambda: client.get(f"{url}/status").json(),
            )
        report = compare_topics(source_props, topic, target_props, f"A.{topic}", timeout_s=60)
        print(f"\n{report.line('source outage 60 s')}")
        assert report.lost == 0, f"lost {report.lost}, e.g. {report.lost_examples}"
        assert report.source_records == 400
        assert_nothing_lost(config, "A->B", topic, records=400)
        exit_codes = {name: p.popen.poll() if p.popen else "never started" for name, p in processes.items()}
        exited = {name: code for name, code in exit_codes.items() if code is not None}
        assert not exited, f"services exited (restarted) during the outage: {exited}"
    finally:
        for node in frozen_source.nodes:
            node.process.send_signal(signal.SIGCONT)
        for process in processes.values():
            process.kill()
