"""Every service over SASL_SSL/SCRAM with credentials only in a secrets file (`${file:...}`): the flow works,
no secret reaches a log line, a metrics or health page or a control topic, and failover needs the token."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from aiokafka.errors import KafkaConnectionError
from confluent_kafka import KafkaException
from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, ResourcePatternType, ResourceType

from shared.kafka.acl_admin import to_binding
from shared.kafka.factories import aio_producer, confluent_admin, confluent_consumer
from shared.localkafka import KafkaCluster, SaslUser
from shared.localkafka.ports import free_port
from tests.integration.test_acl_sync import acl
from tests.support.acls import topic_acls
from tests.support.kafka_io import commit_retrying, consume_all, make_topic, produce, read_to_end
from tests.support.mm2_config import SINGLE_BROKER_DEFAULTS
from tests.support.replica_check import compare_topics
from tests.support.service_process import ServiceProcess

pytestmark = pytest.mark.slow

SERVICES = ("topic_sync", "acl_sync", "data_mirror", "checkpoint", "heartbeat")
FILE_PROVIDER = "org.apache.kafka.common.config.provider.FileConfigProvider"


STANDARD_METRICS = ("process_resident_memory_bytes", "python_gc_objects_collected_total", "strait_build_info{")
MM2_SOURCE_PREFIX = "kafka_connect_mirror_mirrorsourceconnector_"
MM2_CHECKPOINT_PREFIX = "kafka_connect_mirror_mirrorcheckpointconnector_"


def _summed(page: str, name: str, **labels: str) -> float:
    """The sum of `name`'s samples on a /metrics page whose labels include `labels`."""
    total = 0.0
    for line in page.splitlines():
        if line.startswith(name + "{") and all(f'{key}="{value}"' in line for key, value in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


def _jaas(user: SaslUser) -> str:
    return (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{user.name}" password="{user.password}";'
    )


def _grant_everything(cluster: KafkaCluster, principal: str) -> None:
    """Wildcard ALLOW ALL for `principal` on topics, groups and the cluster: broad, but not a super user."""
    bindings = [
        AclBinding(kind, name, ResourcePatternType.LITERAL, principal, "*", AclOperation.ALL, AclPermissionType.ALLOW)
        for kind, name in (
            (ResourceType.TOPIC, "*"),
            (ResourceType.GROUP, "*"),
            (ResourceType.BROKER, "kafka-cluster"),
        )
    ]
    admin = confluent_admin(cluster.client_properties())  # kept alive until the futures resolve
    for future in admin.create_acls(bindings).values():
        future.result(timeout=30)


@pytest.fixture(scope="module")
def mirror_user() -> SaslUser:
    """The services' principal, with a password no other test knows."""
    return SaslUser("strait-mirror", f"mirror-pw-{uuid.uuid4().hex}")


@pytest.fixture(scope="module")
def tls_pair(kafka_runtime: str, mirror_user: SaslUser) -> Iterator[tuple[KafkaCluster, KafkaCluster]]:
    """Two SASL_SSL/SCRAM clusters with StandardAuthorizer, each with its own test CA."""
    clusters = tuple(KafkaCluster(name, sasl=True, tls=True, users=(mirror_user,)) for name in ("TA", "TB"))
    try:
        for cluster in clusters:
            cluster.launch()
        for cluster in clusters:
            cluster.wait_ready(timeout_s=180)
            _grant_everything(cluster, f"User:{mirror_user.name}")
        yield clusters[0], clusters[1]
    finally:
        for cluster in clusters:
            cluster.stop()


def _write_config(directory: Path, clusters: dict[str, KafkaCluster], user: SaslUser, flow: dict[str, str]) -> Path:
    """The MM2 file (no secret in it) and the secrets file its `sasl.jaas.config` values reference."""
    secrets = directory / "secrets.properties"
    secrets.write_text("".join(f"{alias.lower()}.jaas={_jaas(user)}\n" for alias in clusters))
    secrets.chmod(0o600)
    lines = [f"clusters={', '.join(clusters)}", "config.providers=file", f"config.providers.file.class={FILE_PROVIDER}"]
    for alias, cluster in clusters.items():
        props = cluster.client_properties(user)
        props["sasl.jaas.config"] = f"${{file:{secrets}:{alias.lower()}.jaas}}"
        lines += [f"{alias}.{key}={value}" for key, value in props.items()]
    lines += ["A->B.enabled=true", *(f"A->B.{key}={value}" for key, value in flow.items())]
    lines += [f"{key}={value}" for key, value in SINGLE_BROKER_DEFAULTS.items()]
    config = directory / "mm2.properties"
    config.write_text("\n".join(lines) + "\n")
    return config


def _eventually(check: Callable[[], bool], what: str, deadline: float, processes: list[ServiceProcess]) -> None:
    """Poll `check` until it holds; on timeout fail with each service's log tail."""
    while True:
        try:
            if check():
                return
        except (httpx.TransportError, AssertionError, KeyError):
            pass
        if time.monotonic() > deadline:
            tails = "\n".join(f"--- {p.package}\n{p.tail(1500)}" for p in processes)
            raise AssertionError(f"timed out waiting for {what}\n{tails}")
        time.sleep(1)


def _stop_all(processes: list[ServiceProcess], timeout_s: float = 60) -> None:
    """SIGTERM every service at once (their final log lines are searched too), then wait; kill what lingers."""
    for process in processes:
        if process.popen is not None and process.popen.poll() is None:
            process.popen.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    for process in processes:
        if process.popen is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.popen.wait(timeout=max(0.1, deadline - time.monotonic()))
        process.kill()


def _commit_group(props: dict[str, str], topic: str, group: str, count: int) -> None:
    """Consume `count` records of `topic` with `group` and commit, so the checkpoint service has a group."""
    consumer = confluent_consumer(props, **{"group.id": group, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    seen, deadline = 0, time.monotonic() + 60
    try:
        while seen < count and time.monotonic() < deadline:
            seen += len([m for m in consumer.consume(num_messages=count - seen, timeout=0.5) if m.error() is None])
        assert seen == count, f"read {seen} of {count}"
        commit_retrying(consumer)
    finally:
        consumer.close()


def test_all_services_over_sasl_ssl_keep_secrets_out_of_logs_and_metrics(
    tls_pair: tuple[KafkaCluster, KafkaCluster], mirror_user: SaslUser, unique: str, tmp_path: Path
) -> None:
    cluster_a, cluster_b = tls_pair
    admin_a, admin_b = cluster_a.client_properties(), cluster_b.client_properties()
    topic, group, reader = f"orders-{unique}", f"billing-{unique}", f"User:reader-{unique}"
    make_topic(admin_a, topic, partitions=2)
    produce(admin_a, topic, [(f"k{i}".encode(), f"v{i}".encode()) for i in range(200)])
    _commit_group(admin_a, topic, group, 120)
    admin = confluent_admin(admin_a)
    for future in admin.create_acls([to_binding(acl(topic, reader, "READ", "ALLOW"))]).values():
        future.result(timeout=30)

    config = _write_config(
        tmp_path,
        {"A": cluster_a, "B": cluster_b},
        mirror_user,
        {
            "topics": topic,
            "groups": group,
            "emit.checkpoints.interval.seconds": "1",
            "sync.topic.acls.interval.seconds": "2",
        },
    )
    token = f"translator-token-{uuid.uuid4().hex}"
    admins = (cluster_a.admin_user.password, cluster_b.admin_user.password)
    secrets = [mirror_user.password, *admins, token, _jaas(mirror_user)]
    assert not any(secret in config.read_text() for secret in secrets)

    ports = {name: free_port() for name in (*SERVICES, "offset_translator")}
    processes = [ServiceProcess(name, config, tmp_path, "--metrics-port", str(ports[name])) for name in SERVICES]
    translator_port = ports["offset_translator"]
    processes.append(
        ServiceProcess(
            "offset_translator",
            config,
            tmp_path,
            "--port",
            str(translator_port),
            env={"STRAIT_TRANSLATOR_TOKEN": token},
        )
    )
    api = f"http://127.0.0.1:{translator_port}"
    pages: dict[str, str] = {}
    try:
        for process in processes:
            process.start()
        deadline = time.monotonic() + 300
        remote = f"A.{topic}"

        def mirrored() -> bool:
            return len(consume_all(admin_b, remote, expected=200, timeout_s=5)) >= 200

        _eventually(mirrored, f"200 records in {remote} on B", deadline, processes)
        report = compare_topics(admin_a, topic, admin_b, remote)
        print(report.line("SASL_SSL A->B"))
        assert (report.lost, report.duplicates, report.moved) == (0, 0, 0), report.line()

        def checkpointed() -> bool:
            answer = httpx.get(f"{api}/v1/flows/A/B/offsets", params={"group": group}, timeout=10)
            return answer.status_code == 200 and bool(answer.json())

        _eventually(checkpointed, f"translated offsets of {group}", deadline, processes)
        checkpoints = read_to_end(admin_b, "A.checkpoints.internal")
        assert any(group.encode() in (record.key or b"") for record in checkpoints)

        def heartbeat_mirrored() -> bool:
            return len(consume_all(admin_b, "A.heartbeats", expected=1, timeout_s=5)) >= 1

        _eventually(heartbeat_mirrored, "a heartbeat in A.heartbeats on B", deadline, processes)

        def acl_synced() -> bool:
            listed = topic_acls("B", admin_b) or []
            return acl(remote, reader, "READ", "ALLOW") in listed

        _eventually(acl_synced, f"the READ binding of {reader} on {remote}", deadline, processes)

        # Failover is the write endpoint: refused without the token or with a wrong one, served with it.
        failover = f"{api}/v1/flows/A/B/failover"
        body = {"group": group, "dry_run": True}
        missing = httpx.post(failover, json=body, timeout=30)
        wrong = httpx.post(failover, json=body, headers={"Authorization": "Bearer not-the-token"}, timeout=30)
        right = httpx.post(failover, json=body, headers={"Authorization": f"Bearer {token}"}, timeout=30)
        assert (missing.status_code, wrong.status_code) == (401, 401), (missing.text, wrong.text)
        assert right.status_code == 200, right.text
        assert right.json()["dry_run"] is True
        assert right.json()["partitions"]

        for name, port in ports.items():
            for path in ("/metrics", "/health", "/ready"):
                pages[f"{name}{path}"] = httpx.get(f"http://127.0.0.1:{port}{path}", timeout=10).text
        for path in ("/v1/flows", "/v1/status", "/v1/clusters", "/v1/flows/A/B/status"):
            pages[f"offset_translator{path}"] = httpx.get(f"{api}{path}", timeout=10).text
        assert all("strait_" in pages[f"{name}/metrics"] for name in ports), "a metrics page is empty"
        for name in ports:
            absent = [sample for sample in STANDARD_METRICS if sample not in pages[f"{name}/metrics"]]
            assert not absent, f"{name}'s /metrics has no {absent}"
        # data-mirror's per-partition values, also under the names Strimzi gives MM2's (dashboards built for MM2)
        mirror_page = pages["data_mirror/metrics"]
        mm2_named = _summed(mirror_page, f"{MM2_SOURCE_PREFIX}record_count", topic=remote, source="A", target="B")
        own = _summed(mirror_page, "strait_mirror_record_count_total", topic=remote)
        assert mm2_named == own >= 200, (mm2_named, own)
        # checkpoint's latency per group-partition under the names Strimzi gives MM2's checkpoint connector
        checkpoint_page = pages["checkpoint/metrics"]
        latency = f"{MM2_CHECKPOINT_PREFIX}checkpoint_latency_ms"
        labels = {"source": "A", "target": "B", "group": group, "topic": remote, "partition": "0"}
        assert any(
            line.startswith(latency + "{") and all(f'{key}="{value}"' in line for key, value in labels.items())
            for line in checkpoint_page.splitlines()
        ), f"no {latency} for {labels}"
    finally:
        _stop_all(processes)

    logs = {process.package: process.log_path.read_text(errors="replace") for process in processes}
    assert all(process.logs() for process in processes), "a service wrote no JSON log line to search"
    control = [
        record.value or b""
        for internal in ("strait.status.internal", "strait.control.internal")
        for record in read_to_end(admin_b, internal)
    ]
    assert control, "no status or control records to search"
    for secret in secrets:
        for name, text in {**logs, **pages}.items():
            assert secret not in text, f"a secret ({len(secret)} chars) appears in {name}"
        assert not any(secret.encode() in value for value in control), "a secret appears in a control topic record"


async def test_the_tls_listener_checks_certificates_for_both_client_libraries(
    tls_pair: tuple[KafkaCluster, KafkaCluster], unique: str
) -> None:
    cluster_a, cluster_b = tls_pair
    assert cluster_b.tls_files is not None
    good = cluster_a.client_properties()
    # A client that trusts another CA (B's) does not get in, with either library.
    other_ca = {**good, "ssl.truststore.location": str(cluster_b.tls_files.ca)}
    with pytest.raises(KafkaException):
        confluent_admin(other_ca, **{"socket.timeout.ms": 3000}).list_topics(timeout=5)
    refused = aio_producer(other_ca, request_timeout_ms=5000)
    with pytest.raises(KafkaConnectionError):
        await refused.start()
    await refused.stop()
    # Nor does a client that skips TLS.
    with pytest.raises(KafkaException):
        confluent_admin({**good, "security.protocol": "SASL_PLAINTEXT"}).list_topics(timeout=5)
    # With the cluster's own CA, aiokafka (the asyncio services' client) writes and librdkafka reads.
    topic = f"tls-{unique}"
    make_topic(good, topic)
    producer = aio_producer(good)
    await producer.start()
    try:
        await producer.send_and_wait(topic, b"over-tls")
    finally:
        await producer.stop()
    assert [record.value for record in consume_all(good, topic, expected=1)] == [b"over-tls"]
