"""checkpoint on real clusters: exact checkpoints MM2's client reads back, group offset sync, sharding, SIGTERM.

Until data-mirror is swapped in, tests/support/mirror_sim.py copies the records and writes the offset syncs.
Cluster aliases are unique per test, so each test has its own checkpoints and offset-syncs topics.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)
from prometheus_client import CollectorRegistry
from structlog.testing import capture_logs

from services.checkpoint.commit_stream import StreamedSourceGroups
from services.checkpoint.service import CheckpointService, build
from services.checkpoint.settings import CheckpointSettings
from shared.config import load_mm2_config
from shared.control import read_statuses
from shared.kafka.factories import confluent_admin, confluent_consumer
from shared.kafka.group_offsets import CommittedOffset, GroupAdmin
from shared.kafka.group_requests import GroupOffsetsClient
from shared.kafka.partition_reader import read_to_end
from shared.localkafka import KafkaCluster
from shared.records import Checkpoint
from tests.integration.conftest import MIRROR_USER
from tests.support.kafka_io import commit_offsets, commit_retrying, make_topic, produce
from tests.support.mirror_sim import MirrorSimulation
from tests.support.mm2_client import translate_offsets
from tests.support.mm2_config import write_mm2_config
from tests.support.service_process import ServiceProcess

RECORDS = 250


class Flow:
    """A unique pair of aliases over the shared clusters, its topic and its simulated data mirror."""

    def __init__(
        self, a: KafkaCluster, b: KafkaCluster, unique: str, partitions: int = 2, syncs_location: str = "source"
    ) -> None:
        self.a, self.b = a, b
        self.source, self.target = f"a{unique}", f"b{unique}"
        self.name = f"{self.source}->{self.target}"
        self.topic = f"orders-{unique}"
        self.a_props, self.b_props = a.client_properties(), b.client_properties()
        self.mirror = MirrorSimulation(
            self.a_props,
            self.b_props,
            source_alias=self.source,
            target_alias=self.target,
            offset_syncs_location=syncs_location,
        )
        self.remote = self.mirror.remote_topic(self.topic)
        self.checkpoints_topic = f"{self.source}.checkpoints.internal"
        make_topic(self.a_props, self.topic, partitions)
        for partition in range(partitions):
            records = [(f"k{i}".encode(), f"{self.topic}-{partition}-{i}".encode()) for i in range(RECORDS)]
            produce(self.a_props, self.topic, records, partition=partition)
        self.mirror.mirror(self.topic)

    def config(self, tmp_path: Path, **flow: str) -> Path:
        settings = {
            "topics": self.topic,
            "emit.checkpoints.interval.seconds": "1",
            "refresh.groups.interval.seconds": "1",
            "sync.group.offsets.interval.seconds": "1",
            **flow,
        }
        clusters = {self.source: self.a, self.target: self.b}
        return write_mm2_config(tmp_path / f"{self.name.replace('>', '')}.properties", clusters, {self.name: settings})

    def commit(self, props: dict[str, str], group: str, topic: str, offsets: dict[int, int]) -> None:
        """Commit `offsets` for `group` as its consumer would after consuming up to them."""
        commit_offsets(props, group, [TopicPartition(topic, p, offset) for p, offset in offsets.items()])

    def checkpoints(self) -> dict[tuple[str, str, int], Checkpoint]:
        """The latest checkpoint per (group, remote topic, partition) on the target."""
        latest = {}
        for record in read_to_end(self.b_props, self.checkpoints_topic):
            assert record.key is not None
            assert record.value is not None
            checkpoint = Checkpoint.decode(record.key, record.value)
            latest[(checkpoint.group, checkpoint.topic, checkpoint.partition)] = checkpoint
        return latest

    def target_offsets(self, group: str) -> dict[int, int]:
        """`group`'s committed offsets on the remote topic, on the target."""
        admin = GroupAdmin(self.target, confluent_admin(self.b_props), timeout_s=10)
        offsets, errors = admin.committed_offsets([group])
        assert not errors, errors
        return {p: c.offset for (t, p), c in offsets.get(group, {}).items() if t == self.remote}


def _value_at(props: dict[str, str], topic: str, partition: int, offset: int) -> bytes | None:
    consumer = confluent_consumer(props, **{"group.id": "checkpoint-test-reader", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, partition, offset)])
        for _ in range(40):
            for message in consumer.consume(num_messages=1, timeout=0.5):
                if message.error() is None:
                    assert message.offset() == offset
                    value: bytes | None = message.value()
                    return value
        raise AssertionError(f"nothing read at {topic}-{partition}@{offset}")
    finally:
        consumer.close()


async def _wait_for(predicate: Callable[[], bool], timeout_s: float = 60, what: str = "condition") -> None:
    async with asyncio.timeout(timeout_s):
        while not await asyncio.to_thread(predicate):
            await asyncio.sleep(0.5)
    assert predicate(), what


def _service(config: Path, instance: str, **settings: object) -> tuple[CheckpointService, CollectorRegistry]:
    registry = CollectorRegistry()
    values = CheckpointSettings(config=config, instance_id=instance, status_interval_s=1, **settings)  # type: ignore[arg-type]
    return build(values, load_mm2_config(config), registry), registry


@pytest.fixture
def flow(cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str) -> Flow:
    return Flow(cluster_a, cluster_b, unique)


async def test_checkpoints_point_at_the_next_unconsumed_record_and_mm2_reads_them(
    flow: Flow, unique: str, tmp_path: Path
) -> None:
    group = f"readers-{unique}"
    consumed = {0: 150, 1: 37}  # between offset syncs (0, 101, 202, 249): MM2 alone would answer 102 and 1
    flow.commit(flow.a_props, group, flow.topic, consumed)
    service, registry = _service(flow.config(tmp_path), f"cp-{unique}")
    async with service:

        def both_partitions_checkpointed() -> bool:
            found = flow.checkpoints()
            return all((group, flow.remote, p) in found for p in consumed)

        await _wait_for(both_partitions_checkpointed, what="checkpoints for both partitions")

    checkpoints = flow.checkpoints()
    for partition, committed in consumed.items():
        checkpoint = checkpoints[(group, flow.remote, partition)]
        assert checkpoint.upstream_offset == committed
        next_unconsumed = _value_at(flow.b_props, flow.remote, partition, checkpoint.downstream_offset)
        last_consumed = _value_at(flow.b_props, flow.remote, partition, checkpoint.downstream_offset - 1)
        assert next_unconsumed == f"{flow.topic}-{partition}-{committed}".encode()
        assert last_consumed == f"{flow.topic}-{partition}-{committed - 1}".encode()

    mm2_answer = await asyncio.to_thread(translate_offsets, flow.b_props, flow.source, group)
    strait_answer = {(flow.remote, p): checkpoints[(group, flow.remote, p)].downstream_offset for p in consumed}
    assert mm2_answer == strait_answer
    assert registry.get_sample_value("strait_checkpoint_records_total", {"flow": flow.name}) == 2
    assert registry.get_sample_value("strait_checkpoint_latency_ms_count", {"flow": flow.name}) == 2
    # MM2's checkpoint-latency-ms per group-partition (Strimzi's names): both written in one round, one latency
    both = registry.get_sample_value("strait_checkpoint_latency_ms_sum", {"flow": flow.name})
    assert both is not None
    one_round = both / 2
    for partition in consumed:
        labels = {"source": flow.source, "target": flow.target, "group": group, "topic": flow.remote}
        labels["partition"] = str(partition)
        for attribute in ("", "_min", "_max", "_avg"):
            name = f"kafka_connect_mirror_mirrorcheckpointconnector_checkpoint_latency_ms{attribute}"
            assert registry.get_sample_value(name, labels) == pytest.approx(one_round), name


async def test_offset_syncs_stored_on_the_target_are_read_there(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    flow = Flow(cluster_a, cluster_b, unique, syncs_location="target")
    assert flow.mirror.offset_syncs_topic == f"mm2-offset-syncs.{flow.source}.internal"
    group = f"target-syncs-{unique}"
    flow.commit(flow.a_props, group, flow.topic, {1: 220})
    service, _ = _service(flow.config(tmp_path, **{"offset-syncs.topic.location": "target"}), f"cp-{unique}")
    async with service:
        await _wait_for(lambda: (group, flow.remote, 1) in flow.checkpoints(), what="checkpoint")
    assert flow.checkpoints()[(group, flow.remote, 1)].downstream_offset == 220


async def test_group_offset_sync_moves_idle_groups_forward_only(flow: Flow, unique: str, tmp_path: Path) -> None:
    absent, behind, ahead, active = (f"{kind}-{unique}" for kind in ("absent", "behind", "ahead", "active"))
    for group, offset in ((absent, 120), (behind, 200), (ahead, 100), (active, 180)):
        flow.commit(flow.a_props, group, flow.topic, {0: offset})
    flow.commit(flow.b_props, behind, flow.remote, {0: 10})
    flow.commit(flow.b_props, ahead, flow.remote, {0: 240})
    member_ready = threading.Event()
    done = threading.Event()

    def active_member() -> None:
        consumer = confluent_consumer(
            flow.b_props, **{"group.id": active, "enable.auto.commit": False, "auto.offset.reset": "earliest"}
        )
        try:
            consumer.subscribe([flow.remote])
            while not consumer.assignment():
                consumer.poll(0.2)
            commit_retrying(consumer, [TopicPartition(flow.remote, 0, 5)])
            member_ready.set()
            while not done.is_set():
                consumer.poll(0.2)
        finally:
            consumer.close()

    member = threading.Thread(target=active_member, daemon=True)
    member.start()
    try:
        assert await asyncio.to_thread(member_ready.wait, 60)
        config = flow.config(tmp_path, **{"sync.group.offsets.enabled": "true"})
        service, registry = _service(config, f"cp-{unique}")
        async with service:
            await _wait_for(lambda: flow.target_offsets(absent) == {0: 120}, what="absent group created at 120")
            await _wait_for(lambda: flow.target_offsets(behind) == {0: 200}, what="behind group moved to 200")
            await _wait_for(
                lambda: registry.get_sample_value("strait_checkpoint_groups_skipped_active", {"flow": flow.name}) == 1,
                what="active group reported",
            )
            found = flow.checkpoints()
            assert found[(ahead, flow.remote, 0)].downstream_offset == 100
            assert found[(active, flow.remote, 0)].downstream_offset == 180

            def sync_status() -> dict[str, Any]:
                status = read_statuses(flow.b_props).get(f"cp-{unique}/{flow.name}")
                return dict(status.details.get("group_offset_sync") or {}) if status is not None else {}

            # The status is published on its own interval, after the round that found the group active.
            await _wait_for(
                lambda: sync_status().get("active_target_groups_sample") == {active: "STABLE"},
                what="the status names the active group",
            )
        assert flow.target_offsets(ahead) == {0: 240}
        assert flow.target_offsets(active) == {0: 5}
    finally:
        done.set()
        member.join(timeout=30)


async def test_instances_split_the_groups_between_them(flow: Flow, unique: str, tmp_path: Path) -> None:
    groups = [f"split-{unique}-{i}" for i in range(12)]
    for i, group in enumerate(groups):
        flow.commit(flow.a_props, group, flow.topic, {0: 10 + i})
    config = flow.config(tmp_path)
    first, _ = _service(config, f"one-{unique}", shards=4)
    second, _ = _service(config, f"two-{unique}", shards=4)
    async with first, second:

        def all_groups_checkpointed() -> bool:
            found = flow.checkpoints()
            return all((g, flow.remote, 0) in found for g in groups)

        await _wait_for(all_groups_checkpointed, what="every group checkpointed")
        owned = [first.flows[0].lease.owned, second.flows[0].lease.owned]
    assert owned[0].isdisjoint(owned[1])
    assert owned[0] | owned[1] == {0, 1, 2, 3}
    found = flow.checkpoints()
    assert [found[(g, flow.remote, 0)].downstream_offset for g in groups] == [10 + i for i in range(12)]


def test_service_process_stops_on_sigterm_with_a_final_status(flow: Flow, unique: str, tmp_path: Path) -> None:
    group = f"proc-{unique}"
    flow.commit(flow.a_props, group, flow.topic, {1: 42})
    instance = f"proc-{unique}"
    with ServiceProcess("checkpoint", flow.config(tmp_path), tmp_path, "--instance-id", instance) as process:
        deadline = time.monotonic() + 60
        while (group, flow.remote, 1) not in flow.checkpoints():
            assert time.monotonic() < deadline, process.tail()
            time.sleep(0.5)
        code = process.stop()
    assert code == 0, process.tail()
    assert flow.checkpoints()[(group, flow.remote, 1)].downstream_offset == 42
    status = read_statuses(flow.b_props)[f"{instance}/{flow.name}"]
    assert status.state == "stopped"
    assert status.service == "checkpoint"


async def test_group_offsets_are_read_in_batches_and_committed_with_exact_metadata(flow: Flow, unique: str) -> None:
    groups = [f"batch-{unique}-{i}" for i in range(30)]
    client = GroupOffsetsClient(flow.source, flow.a_props, timeout_s=30, groups_per_request=7)
    try:
        changes = {
            group: {
                (flow.topic, 0): CommittedOffset(i, f"meta-{i}" if i % 2 else ""),
                (flow.topic, 1): CommittedOffset(2),
            }
            for i, group in enumerate(groups)
        }
        assert await client.commit_offsets(changes) == {}
        offsets, errors = await client.committed_offsets([*groups, f"missing-{unique}"])
    finally:
        await client.close()
    assert errors == {}
    assert offsets == {**changes, f"missing-{unique}": {}}
    per_group, _ = GroupAdmin(flow.source, confluent_admin(flow.a_props), timeout_s=10).committed_offsets(groups[:2])
    # Offsets only: librdkafka copies an admin result's metadata without a terminating NUL and confluent-kafka
    # reads it as a C string, so metadata a librdkafka client did not write comes back with whatever bytes follow
    # it in memory ('meta-1ace\x06' in one CI run). The exact metadata is asserted above, read by Strait's client.
    assert per_group[groups[1]][(flow.topic, 0)].offset == 1


# -- streamed from the source's offset commits ---------------------------------------------------------------------


def _commit_one_by_one(flow: Flow, group: str, *, partition: int, offsets: range) -> None:
    """`group` commits each of `offsets` in turn, as a consumer committing after every record would."""
    consumer = confluent_consumer(flow.a_props, **{"group.id": group, "enable.auto.commit": False})
    try:
        for offset in offsets:
            commit_retrying(consumer, [TopicPartition(flow.topic, partition, offset)])
    finally:
        consumer.close()


def _delete_group(flow: Flow, group: str) -> None:
    admin = confluent_admin(flow.a_props)  # kept referenced: a collected admin client never completes its futures
    for future in admin.delete_consumer_groups([group], request_timeout=30).values():
        future.result(timeout=30)


def _checkpoint_records(flow: Flow, group: str) -> list[Checkpoint]:
    """Every checkpoint record of `group` in the checkpoints topic, in log order."""
    records = read_to_end(flow.b_props, flow.checkpoints_topic)
    checkpoints = [Checkpoint.decode(r.key, r.value) for r in records if r.key is not None and r.value is not None]
    return [checkpoint for checkpoint in checkpoints if checkpoint.group == group]


async def test_commits_are_checkpointed_from_the_stream_coalesced_and_deleted_groups_forgotten(
    flow: Flow, unique: str, tmp_path: Path
) -> None:
    # Polling every 10 minutes: every checkpoint after the first round below comes from the stream.
    config = flow.config(
        tmp_path, **{"emit.checkpoints.interval.seconds": "600", "refresh.groups.interval.seconds": "600"}
    )
    early, busy, gone = (f"stream-{unique}-{name}" for name in ("early", "busy", "gone"))
    flow.commit(flow.a_props, early, flow.topic, {0: 5})
    service, registry = _service(config, f"stream-{unique}")
    async with service:
        checkpointer = service.flows[0]
        await _wait_for(lambda: (early, flow.remote, 0) in flow.checkpoints(), what="the first round's checkpoint")
        assert checkpointer.streaming

        # A group committing a hundred times in a burst: checkpointed up to its last commit, coalesced.
        await asyncio.to_thread(_commit_one_by_one, flow, busy, partition=1, offsets=range(1, 101))
        await _wait_for(
            lambda: (
                flow.checkpoints().get((busy, flow.remote, 1)) is not None
                and flow.checkpoints()[(busy, flow.remote, 1)].upstream_offset == 100
            ),
            what="the burst's last commit checkpointed",
        )
        written = _checkpoint_records(flow, busy)
        assert written[-1].downstream_offset == 100
        assert len(written) < 50, f"{len(written)} checkpoints for 100 commits: not coalesced"
        commit_latency = registry.get_sample_value("strait_checkpoint_commit_latency_ms_count", {"flow": flow.name})
        assert commit_latency is not None
        assert commit_latency >= 1
        assert (
            registry.get_sample_value(
                "strait_checkpoint_consumer_offsets_records_total", {"flow": flow.name, "kind": "commit"}
            )
            or 0
        ) >= 101

        # A deleted group is forgotten by the stream (its checkpoints stay, as MM2's do).
        flow.commit(flow.a_props, gone, flow.topic, {0: 7})
        await _wait_for(lambda: (gone, flow.remote, 0) in flow.checkpoints(), what="the doomed group checkpointed")
        source = checkpointer.group_source
        assert isinstance(source, StreamedSourceGroups)
        assert gone in source.table.offsets()
        await asyncio.to_thread(_delete_group, flow, gone)
        await _wait_for(lambda: gone not in source.table.offsets(), what="the deleted group forgotten")
        assert early in source.table.offsets()
        status = (await asyncio.to_thread(read_statuses, flow.b_props))[f"stream-{unique}/{flow.name}"]
        assert status.details["group_offsets_from"] == "stream"


async def test_without_permission_on_consumer_offsets_checkpoints_poll_and_name_what_is_missing(
    secure_cluster: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    flow = Flow(secure_cluster, cluster_b, unique)
    group = f"perm-{unique}"
    principal = f"User:{MIRROR_USER.name}"
    admin = confluent_admin(secure_cluster.client_properties())
    # Enough to poll the group's offsets and read the offset syncs, nothing on __consumer_offsets.
    grants = [
        (ResourceType.GROUP, group, AclOperation.DESCRIBE),
        (ResourceType.TOPIC, flow.topic, AclOperation.DESCRIBE),
        (ResourceType.TOPIC, f"mm2-offset-syncs.{flow.target}.internal", AclOperation.READ),
    ]
    bindings = [
        AclBinding(kind, name, ResourcePatternType.LITERAL, principal, "*", operation, AclPermissionType.ALLOW)
        for kind, name, operation in grants
    ]
    for future in admin.create_acls(bindings).values():
        future.result(timeout=30)
    flow.commit(flow.a_props, group, flow.topic, {0: 33})
    config = write_mm2_config(
        tmp_path / "perm.properties",
        {flow.source: secure_cluster, flow.target: cluster_b},
        {flow.name: {"topics": flow.topic, "emit.checkpoints.interval.seconds": "1"}},
        users={flow.source: MIRROR_USER},
    )
    service, _ = _service(config, f"perm-{unique}")
    with capture_logs() as logs:
        async with service:
            await _wait_for(lambda: (group, flow.remote, 0) in flow.checkpoints(), what="a checkpoint by polling")
            assert not service.flows[0].streaming
    assert flow.checkpoints()[(group, flow.remote, 0)].downstream_offset == 33
    [warning] = [log for log in logs if log["event"] == "checkpoint_polling_group_offsets"]
    for part in (f"cluster {flow.source}", "DESCRIBE and READ on topic __consumer_offsets", "missing: DESCRIBE"):
        assert part in warning["reason"], warning
    assert "TOPIC_AUTHORIZATION_FAILED" in warning["error"]
