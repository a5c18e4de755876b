"""kill -9 of each asyncio service in the middle of its work, then a restart: nothing it should have done is lost.

Each test runs the service as a real process on the harness clusters, kills it (SIGKILL, as a crash or an
OOM kill would), changes the world while it is down, starts a new process and checks what a user sees:
topics, configs and partitions on the target, ACLs, checkpoints, heartbeats and the translator's answers.
data-mirror's own kill -9 test (both delivery modes) lives in test_data_mirror.py.
Every flow uses its own cluster aliases, so its lease group and internal topics are this test's own.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, NewPartitions, ResourceType

from shared.filters import AclBindingSpec
from shared.kafka.acl_admin import to_binding
from shared.kafka.factories import confluent_admin
from shared.kafka.partition_reader import read_to_end
from shared.kafka.topic_admin import TopicAdmin
from shared.localkafka import KafkaCluster
from shared.localkafka.ports import free_port
from shared.records import Checkpoint, Heartbeat, OffsetSync
from tests.support.acls import acls_on
from tests.support.kafka_io import commit_offsets, make_topic, produce
from tests.support.mm2_config import write_mm2_config
from tests.support.service_process import ServiceProcess

STATUS_EVERY_1S = {"STRAIT_STATUS_INTERVAL_S": "1"}


def wait_until(check: Callable[[], bool], timeout_s: float, what: str, *processes: ServiceProcess) -> None:
    """Poll `check` until it holds; on timeout fail with `what` and the processes' log tails."""
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            tails = "\n".join(f"--- {p.package}:\n{p.tail(3000)}" for p in processes)
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}\n{tails}")
        time.sleep(0.5)


def topics_of(cluster: KafkaCluster) -> dict[str, int]:
    """Topic -> partition count on `cluster`."""
    listed = TopicAdmin(cluster.name, cluster.client_properties(), timeout_s=30).list_topics()
    return {name: info.partitions for name, info in listed.items()}


def topic_overrides(cluster: KafkaCluster, topic: str) -> dict[str, str | None]:
    """The configs set on the topic itself."""
    described, errors = TopicAdmin(cluster.name, cluster.client_properties(), timeout_s=30).describe_configs([topic])
    assert not errors, errors
    return {entry.name: entry.value for entry in described[topic] if entry.set_on_topic}


def _private_flow(a: KafkaCluster, b: KafkaCluster, unique: str, tmp_path: Path, **settings: str) -> tuple[str, Path]:
    source, target = f"S{unique}", f"T{unique}"
    flow = f"{source}->{target}"
    config = write_mm2_config(tmp_path / "mm2.properties", {source: a, target: b}, {flow: settings})
    return source, config


# -- topic-sync ------------------------------------------------------------------------------------------


def test_topic_sync_killed_mid_work_creates_everything_after_restart(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    a = cluster_a.client_properties()
    alias, config = _private_flow(
        cluster_a, cluster_b, unique, tmp_path, topics=f"tk-{unique}-.*", **{"sync.topic.configs.interval.seconds": "1"}
    )
    batch = [f"tk-{unique}-batch-{i}" for i in range(12)]
    first = ServiceProcess("topic_sync", config, tmp_path, env=STATUS_EVERY_1S).start()
    second: ServiceProcess | None = None
    try:
        first.wait_for_log("leadership_acquired", timeout_s=90)
        for topic in batch:
            make_topic(a, topic, partitions=2)
        # Kill it as soon as it has started on the batch: some remote topics exist, others do not.
        wait_until(
            lambda: any(f"{alias}.{t}" in topics_of(cluster_b) for t in batch), 90, "a first remote topic", first
        )
        first.kill()
        before = {t for t in batch if f"{alias}.{t}" in topics_of(cluster_b)}
        print(f"\ntopic-sync killed with {len(before)} of {len(batch)} remote topics created")

        # While it is down: a new topic with configs, more partitions and a config change on an old one.
        late, grown = f"tk-{unique}-late", batch[0]
        make_topic(a, late, partitions=3, **{"retention.ms": "3600000", "cleanup.policy": "compact"})
        admin = confluent_admin(a)
        for future in admin.create_partitions([NewPartitions(grown, 5)]).values():
            future.result(timeout=30)
        change = ConfigEntry("retention.ms", "7200000", incremental_operation=AlterConfigOpType.SET)
        for future in admin.incremental_alter_configs(
            [ConfigResource(ResourceType.TOPIC, grown, incremental_configs=[change])]
        ).values():
            future.result(timeout=30)
        assert f"{alias}.{late}" not in topics_of(cluster_b), "nothing creates remote topics while topic-sync is down"

        second = ServiceProcess("topic_sync", config, tmp_path, env=STATUS_EVERY_1S).start()

        def caught_up() -> bool:
            on_b = topics_of(cluster_b)
            return (
                all(on_b.get(f"{alias}.{t}") == (5 if t == grown else 2) for t in batch)
                and on_b.get(f"{alias}.{late}") == 3
                and topic_overrides(cluster_b, f"{alias}.{grown}").get("retention.ms") == "7200000"
                and topic_overrides(cluster_b, f"{alias}.{late}").get("cleanup.policy") == "compact"
            )

        wait_until(caught_up, 120, "every topic, partition and config change on the target", second)
        assert topic_overrides(cluster_b, f"{alias}.{late}")["retention.ms"] == "3600000"
        assert second.stop() == 0, second.tail()
    finally:
        for process in (first, second):
            if process is not None:
                process.kill()


# -- acl-sync --------------------------------------------------------------------------------------------


def _acls_on(cluster: KafkaCluster, topic: str) -> set[AclBindingSpec]:
    return acls_on(cluster.name, cluster.client_properties(), topic)


def _topic_acl(topic: str, principal: str, operation: str) -> AclBindingSpec:
    return AclBindingSpec("TOPIC", topic, "LITERAL", principal, "*", operation, "ALLOW")


def test_acl_sync_killed_mid_work_copies_acls_made_while_it_was_down(
    secure_cluster: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    # Both aliases name the secure cluster (it has the authorizer); the filter keeps remote topics from looping.
    source, target = f"S{unique}", f"T{unique}"
    config = write_mm2_config(
        tmp_path / "mm2.properties",
        {source: secure_cluster, target: secure_cluster},
        {f"{source}->{target}": {"topics": f"ak-{unique}-.*", "sync.topic.acls.interval.seconds": "1"}},
    )
    admin = confluent_admin(secure_cluster.client_properties())

    def grant(*bindings: AclBindingSpec) -> None:
        for future in admin.create_acls([to_binding(b) for b in bindings]).values():
            future.result(timeout=30)

    topics = [f"ak-{unique}-{i}" for i in range(3)]
    users = [f"User:reader-{unique}-{i}" for i in range(3)]
    grant(*(_topic_acl(t, users[0], "READ") for t in topics))
    first = ServiceProcess("acl_sync", config, tmp_path, env=STATUS_EVERY_1S).start()
    second: ServiceProcess | None = None
    try:
        wait_until(lambda: _acls_on(secure_cluster, f"{source}.{topics[0]}") != set(), 90, "a first remote ACL", first)
        grant(*(_topic_acl(t, users[1], "READ") for t in topics))  # while it works
        first.kill()
        grant(*(_topic_acl(t, users[2], "DESCRIBE") for t in topics))  # while it is down
        grant(_topic_acl(topics[1], users[2], "ALL"))  # becomes READ on the remote topic

        second = ServiceProcess("acl_sync", config, tmp_path, env=STATUS_EVERY_1S).start()
        expected = {
            t: {
                _topic_acl(f"{source}.{t}", users[0], "READ"),
                _topic_acl(f"{source}.{t}", users[1], "READ"),
                _topic_acl(f"{source}.{t}", users[2], "DESCRIBE"),
                *([_topic_acl(f"{source}.{t}", users[2], "READ")] if t == topics[1] else []),
            }
            for t in topics
        }
        wait_until(
            lambda: all(_acls_on(secure_cluster, f"{source}.{t}") == want for t, want in expected.items()),
            120,
            "every source ACL on the remote topics",
            second,
        )
        assert second.stop() == 0, second.tail()
    finally:
        for process in (first, second):
            if process is not None:
                process.kill()


# -- checkpoint ------------------------------------------------------------------------------------------


def _commit(props: dict[str, str], group: str, topic: str, offsets: dict[int, int]) -> None:
    commit_offsets(props, group, [TopicPartition(topic, p, o) for p, o in offsets.items()])


def _checkpoints(props: dict[str, str], topic: str, group: str) -> list[Checkpoint]:
    """Every checkpoint of `group`, in the order the checkpoints topic holds them."""
    found = []
    for record in read_to_end(props, topic):
        if record.key is not None and record.value is not None:
            checkpoint = Checkpoint.decode(record.key, record.value)
            if checkpoint.group == group:
                found.append(checkpoint)
    return found


def _latest(checkpoints: list[Checkpoint]) -> dict[int, int]:
    return {c.partition: c.downstream_offset for c in checkpoints}


def test_checkpoint_killed_mid_work_keeps_checkpoints_monotonic_and_ends_exact(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    a, b = cluster_a.client_properties(), cluster_b.client_properties()
    topic, group, per_partition = f"ck-{unique}", f"ckg-{unique}", 2000
    alias, config = _private_flow(
        cluster_a,
        cluster_b,
        unique,
        tmp_path,
        topics=topic,
        groups=group,
        **{"emit.checkpoints.interval.seconds": "1", "refresh.groups.interval.seconds": "1"},
    )
    remote, checkpoints_topic = f"{alias}.{topic}", f"{alias}.checkpoints.internal"
    make_topic(a, topic, partitions=2)
    make_topic(b, remote, partitions=2)  # what topic-sync would do
    for p in range(2):
        produce(a, topic, [(None, f"{p}:{i}".encode()) for i in range(per_partition)], partition=p)
    mirror = ServiceProcess("data_mirror", config, tmp_path, env={"STRAIT_COMMIT_INTERVAL_MS": "300"}).start()
    first = ServiceProcess("checkpoint", config, tmp_path, env=STATUS_EVERY_1S).start()
    second: ServiceProcess | None = None
    try:
        _commit(a, group, topic, {0: 300, 1: 200})
        wait_until(
            lambda: set(_latest(_checkpoints(b, checkpoints_topic, group))) == {0, 1},
            180,
            "checkpoints of both partitions",
            mirror,
            first,
        )
        # The group keeps consuming while the service runs, then while it is dead.
        for step in range(1, 6):
            _commit(a, group, topic, {0: 300 + 100 * step, 1: 200 + 100 * step})
            time.sleep(0.3)
        first.kill()
        seen_before = len(_checkpoints(b, checkpoints_topic, group))
        _commit(a, group, topic, {0: 1500, 1: 1100})

        second = ServiceProcess("checkpoint", config, tmp_path, env=STATUS_EVERY_1S).start()
        wait_until(
            lambda: _latest(_checkpoints(b, checkpoints_topic, group)) == {0: 1500, 1: 1100},
            120,
            "checkpoints of the offsets committed while checkpoint was down",
            second,
            mirror,
        )
        _commit(a, group, topic, {0: per_partition, 1: per_partition})
        wait_until(
            lambda: _latest(_checkpoints(b, checkpoints_topic, group)) == {0: per_partition, 1: per_partition},
            60,
            "exact checkpoints at the end of the topic",
            second,
        )
        assert second.stop() == 0, second.tail()
    finally:
        for process in (first, second, mirror):
            if process is not None:
                process.kill()
    history = _checkpoints(b, checkpoints_topic, group)
    assert len(history) > seen_before, "checkpoints kept coming after the restart"
    for partition in (0, 1):
        downstream = [c.downstream_offset for c in history if c.partition == partition]
        upstream = [c.upstream_offset for c in history if c.partition == partition]
        print(f"\npartition {partition}: {len(downstream)} checkpoints, downstream {downstream[0]}..{downstream[-1]}")
        assert downstream == sorted(downstream), f"partition {partition} went backwards: {downstream}"
        assert all(d <= u for d, u in zip(downstream, upstream, strict=True)), "never ahead of the group"


# -- heartbeat -------------------------------------------------------------------------------------------


def _heartbeat_times(props: dict[str, str], source: str, target: str) -> list[int]:
    """Timestamps of the heartbeats (source, target) in `heartbeats` on the cluster of `props`."""
    times = []
    for record in read_to_end(props, "heartbeats"):
        if record.key is None or record.value is None:
            continue
        beat = Heartbeat.decode(record.key, record.value)
        if (beat.source_alias, beat.target_alias) == (source, target):
            times.append(beat.timestamp_ms)
    return times


def test_heartbeat_killed_resumes_heartbeats_after_restart(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    a = cluster_a.client_properties()
    source, config = _private_flow(cluster_a, cluster_b, unique, tmp_path, topics=f"hk-{unique}")
    target = f"T{unique}"
    first = ServiceProcess("heartbeat", config, tmp_path, env=STATUS_EVERY_1S).start()
    second: ServiceProcess | None = None
    try:
        # The pair B->A's heartbeat lands in `heartbeats` on A, as MM2 writes it.
        wait_until(lambda: len(_heartbeat_times(a, target, source)) >= 3, 90, "heartbeats on A", first)
        first.kill()
        killed_ms = int(time.time() * 1000)
        time.sleep(2)
        during = [t for t in _heartbeat_times(a, target, source) if t > killed_ms + 500]
        assert not during, "a killed heartbeat service writes nothing"

        second = ServiceProcess("heartbeat", config, tmp_path, env=STATUS_EVERY_1S).start()
        wait_until(
            lambda: len([t for t in _heartbeat_times(a, target, source) if t > killed_ms]) >= 3,
            90,
            "heartbeats after the restart",
            second,
        )
        assert second.stop() == 0, second.tail()
    finally:
        for process in (first, second):
            if process is not None:
                process.kill()


# -- offset-translator -----------------------------------------------------------------------------------


def test_offset_translator_killed_answers_the_same_after_restart(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    a, b = cluster_a.client_properties(), cluster_b.client_properties()
    source, config = _private_flow(cluster_a, cluster_b, unique, tmp_path, topics=f"ot-{unique}")
    target, topic, group = f"T{unique}", f"ot-{unique}", f"otg-{unique}"
    remote = f"{source}.{topic}"
    make_topic(b, f"{source}.checkpoints.internal", 1, **{"cleanup.policy": "compact"})
    make_topic(a, f"mm2-offset-syncs.{target}.internal", 1, **{"cleanup.policy": "compact"})
    checkpoints = [Checkpoint(group, remote, p, 100 * (p + 1), 90 * (p + 1), f"m{p}") for p in range(3)]
    produce(b, f"{source}.checkpoints.internal", [(c.record_key(), c.record_value()) for c in checkpoints])
    syncs = [OffsetSync(topic, 0, up, up - 7) for up in (10, 50, 400)]
    produce(a, f"mm2-offset-syncs.{target}.internal", [(s.record_key(), s.record_value()) for s in syncs])

    port = free_port()
    url = f"http://127.0.0.1:{port}/v1/flows/{source}/{target}"
    queries: list[tuple[str, dict[str, str | int]]] = [
        ("offsets", {"group": group}),
        ("translate", {"topic": topic, "partition": 0, "offset": 420}),
    ]
    last_refusal: list[str] = []

    def answers(client: httpx.Client) -> list[object] | None:
        try:
            responses = [client.get(f"{url}/{path}", params=params) for path, params in queries]
        except httpx.TransportError:
            return None
        refused = [f"{r.url}: {r.status_code} {r.text[:300]}" for r in responses if r.status_code != 200]
        if refused:
            last_refusal[:] = refused
            return None
        offsets, translation = (r.json() for r in responses)
        for entry in offsets["offsets"]:
            entry.pop("checkpoint_age_ms")  # the only part that changes with time
        return [offsets, translation]

    first = ServiceProcess("offset_translator", config, tmp_path, "--port", str(port)).start()
    second: ServiceProcess | None = None
    with httpx.Client(timeout=10) as client:
        try:
            before: list[object] | None = None

            def loaded() -> bool:
                nonlocal before
                before = answers(client)
                return before is not None and len(before[0]["offsets"]) == 3  # type: ignore[index]

            try:
                wait_until(loaded, 90, "the translator's answers", first)
            except AssertionError as exc:
                raise AssertionError(f"last refusal: {last_refusal}") from exc
            load = threading.Event()

            def hammer() -> None:  # requests in flight when it dies
                while not load.is_set():
                    answers(client)

            worker = threading.Thread(target=hammer, daemon=True)
            worker.start()
            time.sleep(0.5)
            first.kill()
            load.set()
            worker.join(timeout=30)
            assert answers(client) is None, "the killed translator still answers"

            second = ServiceProcess("offset_translator", config, tmp_path, "--port", str(port)).start()
            after: list[object] | None = None

            def answered() -> bool:
                nonlocal after
                after = answers(client)
                return after is not None and len(after[0]["offsets"]) == 3  # type: ignore[index]

            wait_until(answered, 90, "answers after the restart", second)
            assert after == before
            print(f"\ntranslator answers after restart: {after}")
            assert second.stop() == 0, second.tail()
        finally:
            for process in (first, second):
                if process is not None:
                    process.kill()
