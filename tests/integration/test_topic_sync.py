"""topic-sync on real clusters: remote topics appear with the source's partitions and configs, follow its
changes, are announced on the control topic, never loop back in an active/active pair, survive a killed leader,
and missing permissions are reported without stopping the service."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path

import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    ResourcePatternType,
    ResourceType,
)
from prometheus_client import CollectorRegistry

from services.topic_sync.service import build
from services.topic_sync.settings import TopicSyncSettings
from shared.config import load_mm2_config
from shared.control import RemoteTopic, TopicsChanged, follow_events, read_statuses
from shared.kafka.factories import confluent_admin
from shared.kafka.topic_admin import ConfigEntrySpec, TopicAdmin
from shared.leader_service import LeaderLoopService
from shared.localkafka import KafkaCluster, SaslUser
from tests.integration.conftest import MIRROR_USER
from tests.support.kafka_io import make_topic
from tests.support.service_process import ServiceProcess

REPO = Path(__file__).resolve().parents[2]
SINGLE_BROKER = {
    "replication.factor": "1",
    "checkpoints.topic.replication.factor": "1",
    "heartbeats.topic.replication.factor": "1",
    "offset-syncs.topic.replication.factor": "1",
}


def write_config(
    path: Path,
    clusters: Mapping[str, tuple[KafkaCluster, SaslUser | None]],
    flows: Mapping[str, Mapping[str, str]],
) -> Path:
    """An MM2 properties file: every cluster as `alias.*` client keys, each flow enabled with its settings."""
    lines = [f"clusters={', '.join(clusters)}"]
    for alias, (cluster, user) in clusters.items():
        lines += [f"{alias}.{key}={value}" for key, value in cluster.client_properties(user).items()]
    for flow, settings in flows.items():
        lines.append(f"{flow}.enabled=true")
        lines += [f"{flow}.{key}={value}" for key, value in settings.items()]
    lines += [f"{key}={value}" for key, value in SINGLE_BROKER.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


@contextlib.asynccontextmanager
async def running(
    config: Path, instance: str, flows: str = ""
) -> AsyncIterator[tuple[LeaderLoopService, CollectorRegistry]]:
    """topic-sync in this process (as `run_service` builds it), stopped on exit."""
    settings = TopicSyncSettings(config=config, instance_id=instance, flows=flows, status_interval_s=1)
    registry = CollectorRegistry()
    service = build(settings, load_mm2_config(config), registry)
    await service.start()
    try:
        yield service, registry
    finally:
        await service.stop()
    assert service.crashed is None


async def eventually(check: Callable[[], bool], timeout_s: float = 60, what: str = "condition") -> None:
    """Poll a blocking `check` off the loop until it holds; fail after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not await asyncio.to_thread(check):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
        await asyncio.sleep(0.3)


def topics_of(cluster: KafkaCluster) -> dict[str, int]:
    """Topic -> partition count on `cluster`."""
    listed = TopicAdmin(cluster.name, cluster.client_properties(), timeout_s=30).list_topics()
    return {name: info.partitions for name, info in listed.items()}


def topic_overrides(cluster: KafkaCluster, topic: str) -> dict[str, str | None]:
    """The configs set on the topic itself."""
    described, errors = TopicAdmin(cluster.name, cluster.client_properties(), timeout_s=30).describe_configs([topic])
    assert not errors, errors
    entries: list[ConfigEntrySpec] = described[topic]
    return {entry.name: entry.value for entry in entries if entry.set_on_topic}


def alter(cluster: KafkaCluster, topic: str, set_: Mapping[str, str] = {}, delete: tuple[str, ...] = ()) -> None:
    """Incrementally change a topic's configs as an operator would."""
    entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in set_.items()]
    entries += [ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE) for k in delete]
    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=entries)
    admin = confluent_admin(cluster.client_properties())  # kept referenced until the futures complete
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=30)


def grow(cluster: KafkaCluster, topic: str, partitions: int) -> None:
    """Add partitions to a topic."""
    admin = confluent_admin(cluster.client_properties())
    for future in admin.create_partitions([NewPartitions(topic, partitions)]).values():
        future.result(timeout=30)


async def announced(cluster: KafkaCluster, flow: str, wanted: RemoteTopic, timeout_s: float = 60) -> TopicsChanged:
    """The first TopicsChanged of `flow` on the control topic that lists `wanted`."""
    async with asyncio.timeout(timeout_s):
        async for event in follow_events(cluster.client_properties()):
            if isinstance(event, TopicsChanged) and event.flow == flow and wanted in event.topics:
                return event
    raise AssertionError("unreachable")


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float:
    """A metric's current value (0 when it has no sample yet)."""
    return registry.get_sample_value(name, labels) or 0.0


async def test_remote_topic_gets_partitions_and_configs_then_follows_the_source(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    topic, remote = f"ts-{unique}-orders", f"A.ts-{unique}-orders"
    make_topic(
        cluster_a.client_properties(),
        topic,
        partitions=6,
        **{
            "retention.ms": "3600000",
            "cleanup.policy": "compact",
            "max.message.bytes": "2000000",
            "min.insync.replicas": "1",
        },
    )
    config = write_config(
        tmp_path / "mm2.properties",
        {"A": (cluster_a, None), "B": (cluster_b, None)},
        {"A->B": {"topics": f"ts-{unique}-.*", "sync.topic.configs.interval.seconds": "2"}},
    )
    async with running(config, f"ts-{unique}", "A->B") as (_, registry):
        await eventually(lambda: topics_of(cluster_b).get(remote) == 6, what=f"{remote} with 6 partitions")
        overrides = topic_overrides(cluster_b, remote)
        assert overrides["retention.ms"] == "3600000"
        assert overrides["cleanup.policy"] == "compact"
        assert overrides["max.message.bytes"] == "2000000"
        assert "min.insync.replicas" not in overrides  # excluded by config.properties.exclude
        await announced(cluster_b, "A->B", RemoteTopic(source_topic=topic, remote_topic=remote, partitions=6))
        assert sample(registry, "strait_topic_sync_topics_created_total", flow="A->B") >= 1
        assert sample(registry, "strait_topic_sync_leader", flow="A->B") == 1

        # Operators' target-only settings: a throttle (excluded, kept) and a plain override (MM2 resets it).
        alter(cluster_b, remote, {"leader.replication.throttled.replicas": "*", "segment.ms": "7200000"})
        alter(cluster_a, topic, {"retention.ms": "7200000"}, delete=("max.message.bytes",))
        grow(cluster_a, topic, 8)

        def followed() -> bool:
            now = topic_overrides(cluster_b, remote)
            return (
                now.get("retention.ms") == "7200000"
                and "max.message.bytes" not in now
                and "segment.ms" not in now
                and topics_of(cluster_b).get(remote) == 8
            )

        await eventually(followed, what="config change and partition increase on the remote topic")
        assert topic_overrides(cluster_b, remote)["leader.replication.throttled.replicas"] == "*"
        assert topic_overrides(cluster_b, remote)["cleanup.policy"] == "compact"
        await announced(cluster_b, "A->B", RemoteTopic(source_topic=topic, remote_topic=remote, partitions=8))
        assert sample(registry, "strait_topic_sync_partitions_added_total", flow="A->B") >= 2
        assert sample(registry, "strait_topic_sync_configs_changed_total", flow="A->B") >= 3
        assert sample(registry, "strait_topic_sync_last_success_timestamp_seconds", flow="A->B") > 0


async def test_active_active_pair_never_loops_and_never_moves_internal_topics(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    make_topic(cluster_a.client_properties(), f"aa-{unique}-orders", partitions=2)
    make_topic(cluster_b.client_properties(), f"aa-{unique}-payments", partitions=3)
    internal = [f"__aa-{unique}-private", f"aa-{unique}-state.internal", f"aa-{unique}-changelog-internal"]
    for name in internal:
        make_topic(cluster_a.client_properties(), name)
    # Include everything with the test's name and exclude nothing: only MM2's own rules keep topics home.
    settings = {"topics": f".*aa-{unique}.*", "topics.exclude": ""}
    config = write_config(
        tmp_path / "mm2.properties",
        {"A": (cluster_a, None), "B": (cluster_b, None)},
        {"A->B": settings, "B->A": settings},
    )
    async with running(config, f"aa-{unique}") as (service, registry):
        await eventually(lambda: topics_of(cluster_b).get(f"A.aa-{unique}-orders") == 2, what="A.orders on B")
        await eventually(lambda: topics_of(cluster_a).get(f"B.aa-{unique}-payments") == 3, what="B.payments on A")
        # Let both flows run more rounds after they saw the remote topics of the other direction.
        rounds = {f: sample(registry, "strait_topic_sync_rounds_total", flow=f) for f in ("A->B", "B->A")}
        await eventually(
            lambda: all(sample(registry, "strait_topic_sync_rounds_total", flow=f) >= n + 3 for f, n in rounds.items()),
            what="three more rounds of each flow",
        )
        assert {loop.flow.name for loop in service.loops if loop.is_leader} == {"A->B", "B->A"}
    on_a, on_b = topics_of(cluster_a), topics_of(cluster_b)
    assert f"B.A.aa-{unique}-orders" not in on_a
    assert f"A.B.aa-{unique}-payments" not in on_b
    assert not [t for t in on_b if unique in t and t.startswith("A.") and t != f"A.aa-{unique}-orders"]
    for name in internal:
        assert f"A.{name}" not in on_b


async def test_missing_permissions_are_reported_and_retried(
    cluster_a: KafkaCluster, secure_cluster: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    admin = confluent_admin(secure_cluster.client_properties())
    principal = f"User:{MIRROR_USER.name}"

    def grant(resource: ResourceType, name: str, operation: AclOperation) -> None:
        binding = AclBinding(
            resource, name, ResourcePatternType.PREFIXED, principal, "*", operation, AclPermissionType.ALLOW
        )
        for future in admin.create_acls([binding]).values():
            future.result(timeout=30)

    # Enough for Strait's own topics and the lease group on the target, nothing for remote topics.
    grant(ResourceType.TOPIC, "strait.", AclOperation.ALL)
    grant(ResourceType.GROUP, "strait.", AclOperation.ALL)
    topic, remote = f"perm-{unique}", f"A.perm-{unique}"
    make_topic(cluster_a.client_properties(), topic, partitions=2)
    config = write_config(
        tmp_path / "mm2.properties",
        {"A": (cluster_a, None), "S": (secure_cluster, MIRROR_USER)},
        # Other tests leave `heartbeats` topics on the shared cluster A, and MM2's rule replicates them
        # whatever `topics` says; this test grants nothing for them, so it leaves them out.
        {"A->S": {"topics": f"perm-{unique}", "heartbeats.replication.enabled": "false"}},
    )
    async with running(config, f"perm-{unique}", "A->S") as (service, registry):
        errors = "strait_topic_sync_errors_total"
        labels = {"flow": "A->S", "kind": "authorization", "operation": "create topic"}
        await eventually(lambda: sample(registry, errors, **labels) >= 2, what="authorization errors counted twice")
        error = service.loops[0].last_error
        assert error is not None
        for part in ("cluster S", "create topic", remote, "TOPIC_AUTHORIZATION_FAILED"):
            assert part in error, error
        statuses = await asyncio.to_thread(read_statuses, secure_cluster.client_properties())
        status = statuses[f"perm-{unique}/A->S"]
        assert status.last_error is not None
        assert remote in status.last_error
        assert status.state == "degraded"

        grant(ResourceType.TOPIC, remote, AclOperation.ALL)
        await eventually(lambda: topics_of(secure_cluster).get(remote) == 2, what=f"{remote} created once allowed")
        await eventually(lambda: service.loops[0].last_error is None, what="error cleared after a clean round")


def test_standby_takes_over_when_the_leader_is_killed(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    source, target = f"S{unique}", f"T{unique}"  # own aliases: own lease group, untouched by other tests
    flow = f"{source}->{target}"
    config = write_config(
        tmp_path / "mm2.properties",
        {source: (cluster_a, None), target: (cluster_b, None)},
        {flow: {"topics": f"fo-{unique}-.*"}},
    )
    env = {"STRAIT_STATUS_INTERVAL_S": "1"}
    first = ServiceProcess("topic_sync", config, tmp_path, "--instance-id", "one", env=env).start()
    time.sleep(0.01)  # distinct log file names
    second = ServiceProcess("topic_sync", config, tmp_path, "--instance-id", "two", env=env).start()
    processes = {"one": first, "two": second}
    try:
        make_topic(cluster_a.client_properties(), f"fo-{unique}-before", partitions=2)
        deadline = time.monotonic() + 90
        while topics_of(cluster_b).get(f"{source}.fo-{unique}-before") != 2:
            assert time.monotonic() < deadline, first.tail() + second.tail()
            time.sleep(0.3)
        leader = _leader(cluster_b, flow)
        standby = "two" if leader == "one" else "one"
        processes[leader].kill()

        make_topic(cluster_a.client_properties(), f"fo-{unique}-after", partitions=3)
        deadline = time.monotonic() + 90
        while topics_of(cluster_b).get(f"{source}.fo-{unique}-after") != 3:
            assert time.monotonic() < deadline, processes[standby].tail()
            time.sleep(0.3)
        processes[standby].wait_for_log("leadership_acquired", timeout_s=10)

        code = processes[standby].stop()
        assert code == 0, processes[standby].tail()
        assert processes[standby].logs()[-1]["event"] == "service_stopped"
    finally:
        for process in processes.values():
            process.kill()


def _leader(cluster: KafkaCluster, flow: str, timeout_s: float = 60) -> str:
    """The instance whose latest status says it leads `flow`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        statuses = read_statuses(cluster.client_properties())
        leaders = [
            instance
            for instance in ("one", "two")
            if (status := statuses.get(f"{instance}/{flow}")) is not None
            and status.state != "stopped"
            and status.details.get("role") == "leader"
        ]
        if len(leaders) == 1:
            return leaders[0]
        time.sleep(0.5)
    raise AssertionError(f"no single leader of {flow} in the status topic")


@pytest.mark.parametrize(
    ("line", "named"),
    [("A->B.replication.factor=many", "A->B.replication.factor"), ("A->B.topics=[unclosed", "A->B.topics")],
)
def test_malformed_config_exits_2_with_one_line(tmp_path: Path, line: str, named: str) -> None:
    config = tmp_path / "bad.properties"
    config.write_text(
        f"clusters=A,B\nA.bootstrap.servers=127.0.0.1:1\nB.bootstrap.servers=127.0.0.1:2\nA->B.enabled=true\n{line}\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "services.topic_sync", "--config", str(config), "--metrics-port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert named in lines[0]
    assert lines[0].startswith("strait-topic-sync: error:")
