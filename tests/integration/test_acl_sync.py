"""acl-sync on real clusters: topic ACLs reach the remote topic under MM2's rules and are never removed; a
source without an authorizer is reported once; missing permissions are reported and the service keeps going."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from confluent_kafka.admin import (
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)
from prometheus_client import CollectorRegistry

from services.acl_sync.service import build
from services.acl_sync.settings import AclSyncSettings
from shared.config import load_mm2_config
from shared.control import read_statuses
from shared.filters import AclBindingSpec
from shared.kafka.acl_admin import to_binding
from shared.kafka.factories import confluent_admin
from shared.leader_service import LeaderLoopService
from shared.localkafka import KafkaCluster
from tests.integration.conftest import MIRROR_USER
from tests.integration.test_topic_sync import REPO, write_config
from tests.support.acls import acls_on as topic_acls_on
from tests.support.service_process import ServiceProcess


@contextlib.asynccontextmanager
async def running(
    config: Path, instance: str, flows: str
) -> AsyncIterator[tuple[LeaderLoopService, CollectorRegistry]]:
    """acl-sync in this process (as `run_service` builds it), stopped on exit."""
    settings = AclSyncSettings(config=config, instance_id=instance, flows=flows, status_interval_s=1)
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


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float:
    """A metric's current value (0 when it has no sample yet)."""
    return registry.get_sample_value(name, labels) or 0.0


def acl(
    name: str, principal: str, operation: str, permission: str, *, pattern: str = "LITERAL", host: str = "*"
) -> AclBindingSpec:
    """A topic binding as plain data."""
    return AclBindingSpec("TOPIC", name, pattern, principal, host, operation, permission)


def acls_on(cluster: KafkaCluster, topic: str) -> set[AclBindingSpec]:
    """Every binding on `topic` (literal or prefixed), as the admin user sees them."""
    return topic_acls_on(cluster.name, cluster.client_properties(), topic)


async def test_topic_acls_reach_the_remote_topic_under_mm2_rules(
    secure_cluster: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    topic, remote, other = f"acl-{unique}-orders", f"S.acl-{unique}-orders", f"other-{unique}"
    user = {
        name: f"User:{name}-{unique}" for name in ("alice", "bob", "carol", "dave", "erin", "frank", "gina", "hank")
    }
    source = [
        acl(topic, user["alice"], "READ", "ALLOW"),
        acl(topic, user["bob"], "WRITE", "ALLOW"),  # dropped: only the mirror writes remote topics
        acl(topic, user["carol"], "ALL", "ALLOW"),  # becomes READ
        acl(topic, user["dave"], "READ", "DENY"),
        acl(topic, user["erin"], "WRITE", "DENY"),
        acl(topic, user["frank"], "DESCRIBE", "ALLOW", host="10.0.0.1"),
        acl(f"acl-{unique}", user["gina"], "READ", "ALLOW", pattern="PREFIXED"),  # prefixed: not synced
        acl(other, user["hank"], "READ", "ALLOW"),  # topic not replicated by this flow
        AclBindingSpec("GROUP", f"g-{unique}", "LITERAL", user["alice"], "*", "READ", "ALLOW"),  # group: not synced
    ]
    admin = confluent_admin(secure_cluster.client_properties())
    for future in admin.create_acls([to_binding(binding) for binding in source]).values():
        future.result(timeout=30)
    # Both aliases name the secure cluster; the topic filter keeps `S.acl-...` from being mirrored again.
    config = write_config(
        tmp_path / "mm2.properties",
        {"S": (secure_cluster, None), "T": (secure_cluster, None)},
        {"S->T": {"topics": f"acl-{unique}-.*", "sync.topic.acls.interval.seconds": "2"}},
    )
    expected = {
        acl(remote, user["alice"], "READ", "ALLOW"),
        acl(remote, user["carol"], "READ", "ALLOW"),
        acl(remote, user["dave"], "READ", "DENY"),
        acl(remote, user["erin"], "WRITE", "DENY"),
        acl(remote, user["frank"], "DESCRIBE", "ALLOW", host="10.0.0.1"),
    }
    async with running(config, f"acl-{unique}", "S->T") as (_, registry):
        await eventually(lambda: acls_on(secure_cluster, remote) == expected, what=f"the five bindings on {remote}")
        assert acls_on(secure_cluster, f"S.{other}") == set()
        assert acls_on(secure_cluster, f"S.acl-{unique}") == set()
        assert sample(registry, "strait_acl_sync_acls_created_total", flow="S->T") == len(expected)
        assert sample(registry, "strait_acl_sync_leader", flow="S->T") == 1

        # Additive only: a binding removed on the source stays on the target.
        removed = AclBindingFilter(
            ResourceType.TOPIC,
            topic,
            ResourcePatternType.LITERAL,
            user["alice"],
            "*",
            AclOperation.READ,
            AclPermissionType.ALLOW,
        )
        for deleted in admin.delete_acls([removed]).values():
            deleted.result(timeout=30)
        rounds = sample(registry, "strait_acl_sync_rounds_total", flow="S->T")
        await eventually(
            lambda: sample(registry, "strait_acl_sync_rounds_total", flow="S->T") >= rounds + 2, what="two more rounds"
        )
        assert acls_on(secure_cluster, remote) == expected
        assert (
            sample(registry, "strait_acl_sync_errors_total", flow="S->T", kind="authorization", operation="create ACL")
            == 0
        )


async def test_source_without_authorizer_is_reported_once_and_skipped(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    flow = f"A{unique}->B{unique}"
    config = write_config(
        tmp_path / "mm2.properties",
        {f"A{unique}": (cluster_a, None), f"B{unique}": (cluster_b, None)},
        {flow: {"sync.topic.acls.interval.seconds": "1"}},
    )
    async with running(config, f"noauth-{unique}", flow) as (service, registry):
        await eventually(lambda: sample(registry, "strait_acl_sync_rounds_total", flow=flow) >= 4, what="four rounds")
        reported = {"flow": flow, "kind": "security_disabled", "operation": "describe ACLs"}
        assert sample(registry, "strait_acl_sync_errors_total", **reported) == 1
        assert sample(registry, "strait_acl_sync_authorizer_missing", flow=flow, cluster=f"A{unique}") == 1
        assert service.loops[0].last_error is None
        statuses = await asyncio.to_thread(read_statuses, cluster_b.client_properties())
        status = statuses[f"noauth-{unique}/{flow}"]
        assert status.state == "running"
        assert any(
            f"cluster A{unique}" in notice and "SECURITY_DISABLED" in notice for notice in status.details["skipped"]
        )


async def test_missing_permission_on_the_source_is_reported_and_retried(
    secure_cluster: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    config = write_config(
        tmp_path / "mm2.properties",
        {"S": (secure_cluster, MIRROR_USER), "T": (secure_cluster, None)},
        {"S->T": {"topics": f"perm-{unique}", "sync.topic.acls.interval.seconds": "1"}},
    )
    async with running(config, f"aclperm-{unique}", "S->T") as (service, registry):
        labels = {"flow": "S->T", "kind": "authorization", "operation": "describe ACLs"}
        await eventually(
            lambda: sample(registry, "strait_acl_sync_errors_total", **labels) >= 3, what="three failed rounds"
        )
        error = service.loops[0].last_error
        assert error is not None
        for part in ("cluster S", "describe ACLs", "CLUSTER_AUTHORIZATION_FAILED"):
            assert part in error, error
        assert not service.stopping
        statuses = await asyncio.to_thread(read_statuses, secure_cluster.client_properties())
        status = statuses[f"aclperm-{unique}/S->T"]
        assert status.state == "degraded"
        assert status.last_error == error


def test_sigterm_stops_with_exit_0_and_a_final_log_line(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    config = write_config(
        tmp_path / "mm2.properties",
        {f"A{unique}": (cluster_a, None), f"B{unique}": (cluster_b, None)},
        {f"A{unique}->B{unique}": {}},
    )
    with ServiceProcess("acl_sync", config, tmp_path, "--instance-id", f"term-{unique}") as process:
        process.wait_for_log("leadership_acquired", timeout_s=60)
        process.wait_for_log("acl_sync_skipped", timeout_s=60)
        code = process.stop()
        assert code == 0, process.tail()
        assert process.logs()[-1]["event"] == "service_stopped", process.tail()


def test_malformed_config_exits_2_with_one_line(tmp_path: Path) -> None:
    config = tmp_path / "bad.properties"
    config.write_text("clusters=A,B\nA.bootstrap.servers=nowhere\nB.bootstrap.servers=127.0.0.1:2\nA->B.enabled=true\n")
    result = subprocess.run(
        [sys.executable, "-m", "services.acl_sync", "--config", str(config), "--metrics-port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("strait-acl-sync: error:")
    assert "A.bootstrap.servers" in lines[0]
