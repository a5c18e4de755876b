"""The offset translator on real clusters: MM2-equal answers, a failover drill, refusals, the process lifecycle.

Checkpoints, offset syncs and status records are written here with Strait's codecs, exactly as the
checkpoint, data-mirror and other services would, so these tests do not depend on those services.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition
from fastapi import FastAPI
from prometheus_client import CollectorRegistry
from structlog.testing import capture_logs

from services.checkpoint.service import build as build_checkpoint
from services.checkpoint.settings import CheckpointSettings
from services.data_mirror.sync_rules import SyncTracker
from services.offset_translator.app import create_app
from services.offset_translator.settings import TranslatorSettings
from shared.config import MirrorMakerConfig, load_mm2_config
from shared.control import ControlPublisher, StatusReporter
from shared.control.topic_names import progress_topic
from shared.dr.records import FlowDrState
from shared.dr.store import DrStore
from shared.kafka.factories import confluent_admin, confluent_consumer, confluent_producer
from shared.kafka.partition_reader import read_to_end
from shared.localkafka import KafkaCluster
from shared.localkafka.ports import free_port
from shared.records import Checkpoint, Heartbeat, OffsetSync
from shared.records.offset_sync import SYNC_SEGMENT_HEADER, SyncSegment
from tests.support.kafka_io import commit_offsets, make_topic, produce
from tests.support.mm2_client import translate_offsets
from tests.support.mm2_config import write_mm2_config
from tests.support.service_process import ServiceProcess

COMPACT = {"cleanup.policy": "compact"}


@dataclass
class Flow:
    """A private flow S->T (unique aliases, so its internal topics are this test's own) on clusters A -> B."""

    source: str
    target: str
    config_path: Path
    a: dict[str, str]
    b: dict[str, str]

    @property
    def config(self) -> MirrorMakerConfig:
        return load_mm2_config(self.config_path)

    @property
    def checkpoints_topic(self) -> str:
        return f"{self.source}.checkpoints.internal"

    @property
    def syncs_topic(self) -> str:
        return f"mm2-offset-syncs.{self.target}.internal"

    def remote(self, topic: str) -> str:
        return f"{self.source}.{topic}"

    def write_checkpoints(self, checkpoints: Sequence[Checkpoint]) -> None:
        make_topic(self.b, self.checkpoints_topic, 1, **COMPACT)
        produce(self.b, self.checkpoints_topic, [(c.record_key(), c.record_value()) for c in checkpoints], partition=0)

    def write_syncs(self, syncs: Sequence[OffsetSync]) -> None:
        make_topic(self.a, self.syncs_topic, 1, **COMPACT)
        produce(self.a, self.syncs_topic, [(s.record_key(), s.record_value()) for s in syncs], partition=0)


@pytest.fixture
def flow(cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path) -> Flow:
    source, target = f"S{unique}", f"T{unique}"
    path = write_mm2_config(
        tmp_path / "mm2.properties", {source: cluster_a, target: cluster_b}, {f"{source}->{target}": {}}
    )
    return Flow(source, target, path, cluster_a.client_properties(), cluster_b.client_properties())


def settings_for(flow: Flow, **values: Any) -> TranslatorSettings:
    return TranslatorSettings(
        **{
            "config": flow.config_path,
            "translator_token": None,
            "topology_refresh_s": 1,
            "status_interval_s": 1,
            **values,
        }
    )


@contextlib.asynccontextmanager
async def running(app: FastAPI, *, ready: bool = True) -> AsyncIterator[httpx.AsyncClient]:
    """The app with its lifespan (feeds following the real topics) and a client; waits for /ready."""
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1", timeout=60) as client:
            if ready:
                await wait_for(client, "/ready", lambda r: r.status_code == 200)
            yield client


async def wait_for(
    client: httpx.AsyncClient,
    url: str,
    done: Callable[[httpx.Response], bool],
    *,
    params: dict[str, str | int] | None = None,
    timeout_s: float = 60,
) -> httpx.Response:
    deadline = time.monotonic() + timeout_s
    while True:
        response = await client.get(url, params=params)
        if done(response):
            return response
        assert time.monotonic() < deadline, f"{url}: still {response.status_code} {response.text[:300]}"
        await asyncio.sleep(0.2)


async def test_translate_endpoint_equals_mm2_remote_cluster_utils(flow: Flow, unique: str) -> None:
    group = f"g-{unique}"
    flow.write_checkpoints(
        [
            Checkpoint(group, flow.remote("orders"), 0, 100, 90, "first"),
            Checkpoint(group, flow.remote("orders"), 1, 7, 7),
            Checkpoint(f"other-{unique}", flow.remote("orders"), 0, 500, 480),
            Checkpoint(group, flow.remote("payments"), 2, 3000, 2950, "m"),
            Checkpoint(group, flow.remote("orders"), 0, 150, 141, "second"),
            # An upstream rewind: MM2's reader keeps the latest record, not the largest offset.
            Checkpoint(group, flow.remote("orders"), 1, 2, 2, "rewound"),
        ]
    )
    app = create_app(settings_for(flow), flow.config)
    async with running(app) as client:
        response = await client.get(f"/v1/flows/{flow.source}/{flow.target}/offsets", params={"group": group})
    assert response.status_code == 200, response.text
    ours = {(o["topic"], o["partition"]): o["offset"] for o in response.json()["offsets"]}

    mm2 = await asyncio.to_thread(translate_offsets, flow.b, flow.source, group)
    assert ours == mm2
    assert ours == {(flow.remote("orders"), 0): 141, (flow.remote("orders"), 1): 2, (flow.remote("payments"), 2): 2950}


# -- exact answers across restarts ------------------------------------------------------------


def copy_exactly_once(flow: Flow, topic: str, records: int, interval: int) -> list[OffsetSync]:
    """Copy `topic` A -> B in transactions of `interval` records, as an exactly-once data mirror does, and
    write the offset syncs its SyncTracker decides (with their segment header) after each commit."""
    remote = flow.remote(topic)
    make_topic(flow.b, remote, 1)
    copier = confluent_producer(flow.b, **{"transactional.id": f"copy-{topic}", "linger.ms": 5})
    copier.init_transactions(30)
    for start in range(0, records, interval):
        copier.begin_transaction()
        for upstream in range(start, min(start + interval, records)):
            copier.produce(remote, value=f"v{upstream}".encode(), partition=0)
        copier.commit_transaction(30)
    copied = read_to_end(flow.b, remote)
    assert [r.value for r in copied] == [f"v{u}".encode() for u in range(records)]

    make_topic(flow.a, flow.syncs_topic, 1, **COMPACT)
    writer = confluent_producer(flow.a)
    tracker = SyncTracker(offset_lag_max=100)
    written: list[OffsetSync] = []
    for upstream, record in enumerate(copied):
        tracker.delivered(upstream, record.offset)
        if upstream % interval == interval - 1 or upstream == records - 1:  # a commit
            for pending in tracker.take():
                sync = OffsetSync(topic, 0, pending.upstream, pending.downstream)
                header = (SYNC_SEGMENT_HEADER, SyncSegment(tracker.writer, pending.jumps).encode())
                writer.produce(
                    flow.syncs_topic, key=sync.record_key(), value=sync.record_value(), headers=[header], partition=0
                )
                written.append(sync)
    assert writer.flush(30) == 0
    return written


async def test_answers_stay_exact_when_checkpoint_and_translator_restart(
    flow: Flow, cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    topic, group = f"events-{unique}", f"late-{unique}"
    make_topic(flow.a, topic, 1)
    produce(flow.a, topic, [(None, f"v{u}".encode()) for u in range(3000)], partition=0)
    # 30 transactions: each commit marker on B starts a new run of syncs; MM2's store thins the old ones out.
    syncs = copy_exactly_once(flow, topic, 3000, interval=100)
    assert len({(s.downstream_offset - s.upstream_offset) for s in syncs}) == 30
    config = write_mm2_config(
        tmp_path / "restart.properties",
        {flow.source: cluster_a, flow.target: cluster_b},
        {f"{flow.source}->{flow.target}": {"topics": topic, "emit.checkpoints.interval.seconds": "1",
                                           "refresh.groups.interval.seconds": "1"}},
    )  # fmt: skip
    base = f"/v1/flows/{flow.source}/{flow.target}"
    remote = flow.remote(topic)

    def checkpoint_service() -> Any:
        values = CheckpointSettings(config=config, instance_id=f"cp-{unique}", status_interval_s=1)
        return build_checkpoint(values, load_mm2_config(config), CollectorRegistry())

    async def resumes_at(client: httpx.AsyncClient, downstream: int) -> None:
        await wait_for(
            client,
            f"{base}/offsets",
            lambda r: r.status_code == 200 and [o["offset"] for o in r.json()["offsets"]] == [downstream],
            params={"group": group},
        )

    # First lives: the group has read 500 records.
    commit(flow.a, group, {(topic, 0): 500})
    async with (
        checkpoint_service(),
        running(create_app(settings_for(flow, config=config), load_mm2_config(config))) as client,
    ):
        await resumes_at(client, 505)  # 500 records and 5 commit markers before it on B

    # While both are down the group reads on, to 1234; then both restart and read the topics from the start.
    commit(flow.a, group, {(topic, 0): 1234})
    exact = next(r.offset for r in read_to_end(flow.b, remote) if r.value == b"v1234")
    assert exact == 1246
    async with (
        checkpoint_service(),
        running(create_app(settings_for(flow, config=config), load_mm2_config(config))) as client,
    ):
        await resumes_at(client, exact)
        translated = await client.get(f"{base}/translate", params={"topic": topic, "partition": 0, "offset": 1234})
    assert translated.status_code == 200, translated.text
    answer = translated.json()
    assert answer["downstream_offset"] == exact
    # MM2's store keeps only the newest sync after a restart: it has no answer for 1234 at all.
    assert answer["mm2_downstream_offset"] is None

    mm2_client = await asyncio.to_thread(translate_offsets, flow.b, flow.source, group)
    assert mm2_client == {(remote, 0): exact}


# -- failover drill ----------------------------------------------------------------------------


def produce_in_transactions(
    props: dict[str, str], topic: str, partitions: int, per_partition: int, unique: str
) -> None:
    """Records in small transactions, so each commit marker takes an offset: upstream offsets have gaps."""
    producer = confluent_producer(props, **{"transactional.id": f"drill-{unique}", "linger.ms": 1})
    producer.init_transactions(30)
    sent = 0
    while sent < per_partition:
        producer.begin_transaction()
        for index in range(sent, min(sent + 7, per_partition)):
            for partition in range(partitions):
                producer.produce(
                    topic, key=f"{partition}".encode(), value=f"{partition}:{index}".encode(), partition=partition
                )
        producer.commit_transaction(30)
        sent += 7


def read_partition(props: dict[str, str], topic: str, partition: int, end_count: int) -> list[tuple[int, bytes]]:
    """(offset, value) of every committed record of one partition."""
    consumer = confluent_consumer(
        props, **{"group.id": "drill-reader", "enable.auto.commit": False, "isolation.level": "read_committed"}
    )
    try:
        consumer.assign([TopicPartition(topic, partition, 0)])
        records: list[tuple[int, bytes]] = []
        deadline = time.monotonic() + 30
        while len(records) < end_count and time.monotonic() < deadline:
            for message in consumer.consume(500, 0.5):
                if message.error() is None:
                    records.append((message.offset() or 0, message.value() or b""))
        assert len(records) == end_count, f"{topic}-{partition}: {len(records)} of {end_count} records"
        return records
    finally:
        consumer.close()


def commit(props: dict[str, str], group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Commit `offsets` for `group` as its consumer would."""
    commit_offsets(props, group, [TopicPartition(t, p, o) for (t, p), o in offsets.items()])


def consume_group(props: dict[str, str], topic: str, group: str, expected: int) -> list[bytes]:
    """What the group reads on `topic` from its committed offsets (earliest where it has none)."""
    consumer: Consumer = confluent_consumer(
        props, **{"group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False}
    )
    values: list[bytes] = []
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 60
        idle_since: float | None = None
        while time.monotonic() < deadline:
            batch = [m for m in consumer.consume(500, 0.5) if m.error() is None]
            values += [m.value() or b"" for m in batch]
            if len(values) >= expected:
                idle_since = idle_since or time.monotonic()
                if not batch and time.monotonic() - idle_since > 2:
                    break  # keep reading a little: a duplicate would arrive now
        return values
    finally:
        consumer.close()


async def test_failover_drill_loses_nothing_and_reads_nothing_twice(flow: Flow, unique: str) -> None:
    topic, partitions, per_partition = f"orders-{unique}", 3, 40
    group = f"app-{unique}"
    remote = flow.remote(topic)
    make_topic(flow.a, topic, partitions)
    make_topic(flow.b, remote, partitions)
    produce_in_transactions(flow.a, topic, partitions, per_partition, unique)

    syncs: list[OffsetSync] = []
    checkpoints: list[Checkpoint] = []
    consumed_on_a: list[bytes] = []
    # How far the group got on A: partway, not at all, and everything.
    positions = {0: 17, 1: None, 2: per_partition}
    committed: dict[tuple[str, int], int] = {}
    for partition in range(partitions):
        upstream = read_partition(flow.a, topic, partition, per_partition)
        # Copy A -> B (one non-transactional batch): downstream offsets 0..n-1, upstream ones have gaps.
        produce(flow.b, remote, [(str(partition).encode(), value) for _, value in upstream], partition=partition)
        previous = None
        for downstream, (up, _) in enumerate(upstream):
            if previous is None or up - previous != 1:  # Strait's rule: a sync at every upstream jump
                syncs.append(OffsetSync(topic, partition, up, downstream))
            previous = up
        syncs.append(OffsetSync(topic, partition, upstream[-1][0], len(upstream) - 1))
        read = positions[partition]
        if read is None:
            continue
        consumed_on_a += [value for _, value in upstream[:read]]
        # The group commits the offset after the last record it read (a marker's offset, often).
        next_upstream = upstream[read - 1][0] + 1
        committed[(topic, partition)] = next_upstream
        # Exact translation: the downstream offset of the first copied record at or after that offset.
        downstream = next((d for d, (up, _) in enumerate(upstream) if up >= next_upstream), len(upstream))
        checkpoints.append(Checkpoint(group, remote, partition, next_upstream, downstream))
    commit(flow.a, group, committed)

    app = create_app(settings_for(flow), flow.config)
    async with running(app) as client:
        # Written while the translator runs, as the services would: every sync is kept, not only the last.
        flow.write_syncs(syncs)
        flow.write_checkpoints(checkpoints)
        base = f"/v1/flows/{flow.source}/{flow.target}"
        offsets = await wait_for(
            client,
            f"{base}/offsets",
            lambda r: r.status_code == 200 and len(r.json()["offsets"]) == 2,
            params={"group": group},
        )
        assert [o["offset"] for o in offsets.json()["offsets"]] == [c.downstream_offset for c in checkpoints]
        # From the syncs alone an older offset may be coarser, but never past the exact answer (nothing skipped).
        for checkpoint in checkpoints:
            params: dict[str, str | int] = {
                "topic": topic,
                "partition": checkpoint.partition,
                "offset": checkpoint.upstream_offset,
            }
            translated = await wait_for(client, f"{base}/translate", lambda r: r.status_code == 200, params=params)
            answer = translated.json()
            assert answer["mm2_downstream_offset"] <= answer["downstream_offset"] <= checkpoint.downstream_offset
        result = await client.post(f"{base}/failover", json={"group": group})
    assert result.status_code == 200, result.text
    body = result.json()
    assert body["applied"] is True
    assert {(p["partition"], p["action"]) for p in body["partitions"]} == {(0, "set"), (2, "set")}

    consumed_on_b = await asyncio.to_thread(
        consume_group, flow.b, remote, group, partitions * per_partition - len(consumed_on_a)
    )
    produced = {f"{p}:{i}".encode() for p in range(partitions) for i in range(per_partition)}
    assert set(consumed_on_a) | set(consumed_on_b) == produced, "records missing after failover"
    assert len(consumed_on_a) + len(consumed_on_b) == len(produced), "records read twice after failover"


async def test_failover_dry_run_writes_nothing_and_an_active_group_is_refused(flow: Flow, unique: str) -> None:
    group = f"busy-{unique}"
    remote = flow.remote(f"t-{unique}")
    make_topic(flow.b, remote, 1)
    produce(flow.b, remote, [(None, b"x")] * 10, partition=0)
    flow.write_checkpoints([Checkpoint(group, remote, 0, 8, 6)])
    url = f"/v1/flows/{flow.source}/{flow.target}/failover"
    admin = confluent_admin(flow.b)

    def committed() -> int | None:
        answer = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(30)
        offsets = [tp.offset for tp in answer.topic_partitions or [] if tp.offset >= 0]
        return offsets[0] if offsets else None

    app = create_app(settings_for(flow), flow.config)
    async with running(app) as client:
        dry = await client.post(url, json={"group": group, "dry_run": True})
        assert dry.status_code == 200, dry.text
        assert dry.json()["applied"] is False
        assert dry.json()["partitions"][0]["action"] == "set"
        assert await asyncio.to_thread(committed) is None

        consumer = confluent_consumer(flow.b, **{"group.id": group, "enable.auto.commit": False})
        try:
            consumer.subscribe([remote])
            deadline = time.monotonic() + 60
            while not consumer.assignment():
                assert time.monotonic() < deadline, "the consumer never joined"
                await asyncio.to_thread(consumer.poll, 0.5)
            busy = await client.post(url, json={"group": group})
            assert busy.status_code == 409, busy.text
            assert "active member" in busy.json()["detail"]
        finally:
            consumer.close()
        assert await asyncio.to_thread(committed) is None

        with capture_logs() as logs:
            done = await client.post(url, json={"group": group}, headers={"User-Agent": "failover-drill"})
        assert done.status_code == 200, done.text
        assert await asyncio.to_thread(committed) == 6
        # The audit line: who moved which group, with what flags, each partition from where to where.
        (line,) = [log for log in logs if log["event"] == "group_failover_done"]
        asked = (line["group"], line["flow"], line["dry_run"], line["allow_rewind"])
        assert asked == (group, f"{flow.source}->{flow.target}", False, False)
        assert "failover-drill" in line["by"]
        assert line["changes"] == [(remote, 0, None, 6, "set")]
        again = await client.post(url, json={"group": group})
        assert again.json()["partitions"][0]["action"] == "unchanged"
        assert again.json()["applied"] is False


async def test_status_heartbeats_and_topology_from_real_topics(flow: Flow, unique: str) -> None:
    publisher = ControlPublisher(flow.b, replication_factor=1)
    await publisher.start()
    try:
        reporter = StatusReporter(
            [publisher],
            service="data-mirror",
            instance_id=f"dm-{unique}",
            flow=f"{flow.source}->{flow.target}",
            snapshot=lambda: ("running", None, {"records_behind": 12, "topics": 1}),
        )
        await reporter.publish()
    finally:
        await publisher.stop()
    heartbeats = flow.remote("heartbeats")
    make_topic(flow.b, heartbeats, 1)
    beat = Heartbeat(flow.source, flow.target, int(time.time() * 1000) - 3000)
    produce(flow.b, heartbeats, [(beat.record_key(), beat.record_value())], partition=0)
    make_topic(flow.b, flow.remote(f"data-{unique}"), 1)

    app = create_app(settings_for(flow), flow.config)
    async with running(app) as client:
        status = await wait_for(
            client,
            f"/v1/flows/{flow.source}/{flow.target}/status",
            lambda r: r.status_code == 200 and r.json()["heartbeat_age_s"] is not None and bool(r.json()["instances"]),
        )
        topology = await wait_for(client, f"/v1/clusters/{flow.target}/topology", lambda r: r.status_code == 200)
        # The translator reports itself too.
        await wait_for(
            client,
            f"/v1/flows/{flow.source}/{flow.target}/status",
            lambda r: "offset-translator" in {i["service"] for i in r.json()["instances"]},
        )
    body = status.json()
    mirror = next(i for i in body["instances"] if i["service"] == "data-mirror")
    assert mirror["instance"] == f"dm-{unique}/{flow.source}->{flow.target}"
    assert body["records_behind"] == 12
    assert body["heartbeat_age_s"] >= 3
    assert flow.source in topology.json()["upstream_clusters"]
    assert topology.json()["replication_hops"][flow.source] == 1
    assert flow.remote(f"data-{unique}") in topology.json()["remote_topics_by_source"][flow.source]


async def test_answers_wait_for_the_topics_to_be_read_and_follow_new_checkpoints(flow: Flow, unique: str) -> None:
    group = f"live-{unique}"
    app = create_app(settings_for(flow), flow.config)
    async with running(app) as client:
        # Neither topic exists yet: nothing to read, so the index is loaded and the group unknown.
        url = f"/v1/flows/{flow.source}/{flow.target}/offsets"
        assert (await client.get(url, params={"group": group})).status_code == 404
        flow.write_checkpoints([Checkpoint(group, flow.remote("t"), 0, 5, 5)])
        response = await wait_for(client, url, lambda r: r.status_code == 200, params={"group": group})
        assert response.json()["offsets"][0]["offset"] == 5
        flow.write_checkpoints([Checkpoint(group, flow.remote("t"), 0, 9, 8)])
        await wait_for(client, url, lambda r: r.json()["offsets"][0]["offset"] == 8, params={"group": group})


def test_the_process_serves_until_sigterm_and_exits_cleanly(flow: Flow, unique: str, tmp_path: Path) -> None:
    group = f"proc-{unique}"
    flow.write_checkpoints([Checkpoint(group, flow.remote("t"), 0, 3, 3)])
    port = free_port()
    with ServiceProcess("offset_translator", flow.config_path, tmp_path, "--port", str(port)) as process:
        process.wait_for_log("service_started")
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
            deadline = time.monotonic() + 60
            while client.get("/ready").status_code != 200:
                assert time.monotonic() < deadline, process.tail()
                time.sleep(0.2)
            offsets = client.get(f"/v1/flows/{flow.source}/{flow.target}/offsets", params={"group": group})
            assert offsets.json()["offsets"][0]["offset"] == 3
            assert "strait_translator_index_groups" in client.get("/metrics").text
        assert process.stop() == 0, process.tail()
    assert any(entry.get("event") == "service_stopped" and entry.get("crashed") is None for entry in process.logs())


def test_bad_settings_stop_the_process_with_one_line(flow: Flow, tmp_path: Path) -> None:
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "services.offset_translator", "--config", str(flow.config_path), "--flows", "S->Q"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "strait-offset-translator: error: flow 'S->Q' names unknown cluster alias 'S' "
        f"(clusters={flow.source},{flow.target})"
    ]


# -- schema-driven fuzzing ---------------------------------------------------------------------

FUZZ_TOKEN = "fuzz-token-0123456789"


@pytest.fixture(scope="module")
async def fuzz_app(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[FastAPI]:
    """An app whose index was loaded from real topics (aliases A and B, as the schema's examples use), frozen."""
    # Its own topic only: other tests make and delete topics on A at the same time, which a failover of every
    # topic would list (a read of one being deleted times out: a 503 the fuzzer counts as a server error)
    path = write_mm2_config(
        tmp_path_factory.mktemp("fuzz") / "mm2.properties",
        {"A": cluster_a, "B": cluster_b},
        {"A->B": {"topics": "orders"}},
    )
    flow = Flow("A", "B", path, cluster_a.client_properties(), cluster_b.client_properties())
    make_topic(flow.b, "A.orders", 2)
    make_topic(flow.b, progress_topic("A"), 1)  # data-mirror's, as once it ran: DR actions read it
    produce(flow.b, "A.orders", [(None, b"r")] * 20, partition=0)
    flow.write_checkpoints(
        [Checkpoint("orders-app", "A.orders", 0, 12, 10), Checkpoint("orders-app", "A.orders", 1, 0, 0)]
    )
    flow.write_syncs([OffsetSync("orders", 0, 12, 10)])
    settings = settings_for(
        flow, translator_token=FUZZ_TOKEN, failover_timeout_s=10, dr_max_wait_s=3, allowed_hosts="testserver"
    )
    loader = create_app(settings, flow.config)
    async with running(loader) as client:
        await wait_for(client, "/v1/clusters/B/topology", lambda r: r.status_code == 200)
        await wait_for(client, "/v1/clusters/A/topology", lambda r: r.status_code == 200)
    # Serve that index without following: the fuzzer's requests then see one consistent state.
    yield create_app(settings, flow.config, index=loader.state.index, follow=False)
    # The fuzzer's failovers stopped A->B on these brokers, which later tests of this process use too: resume it.
    resumed = FlowDrState(flow="A->B", state="active", action="failback", by="the fuzz test's teardown")
    await asyncio.to_thread(DrStore(flow.config.flow("A", "B")).write, resumed)


def test_schema_driven_fuzzing_finds_no_server_error_and_no_schema_violation(fuzz_app: FastAPI) -> None:
    """Every check of schemathesis (status codes, content types, response schemas, auth, methods), on
    generated valid and invalid requests and on the schema's own examples, against the app in-process."""
    schemathesis = pytest.importorskip("schemathesis")  # in the dev extra; skipped where it is not installed
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
    from schemathesis.generation import GenerationMode

    schema = schemathesis.openapi.from_asgi("/openapi.json", fuzz_app)
    # A body over the translator's limit is refused as too large (413), before it is parsed: a rejection too
    rejection = schema.config.checks.negative_data_rejection
    rejection.expected_statuses = [*rejection.expected_statuses, "413"]
    operations = [result.ok() for result in schema.get_all_operations()]
    from_examples = [s for op in operations for s in schema.get_strategies_from_examples(op)]
    strategy = st.one_of(
        schema.as_strategy(GenerationMode.POSITIVE), schema.as_strategy(GenerationMode.NEGATIVE), *from_examples
    )
    seen: Counter[tuple[str, int]] = Counter()

    @given(case=strategy)
    @settings(max_examples=500, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    def call(case: Any) -> None:
        # A DR action reads the clusters (each read bounded by dr_max_wait_s): more than the default 10 s on a busy box
        response = case.call_and_validate(headers={"Authorization": f"Bearer {FUZZ_TOKEN}"}, timeout=60)
        seen[(case.operation.label, response.status_code)] += 1

    call()
    # Every operation of the schema was called (the health, metrics and list endpoints take no input: once each).
    assert {label for (label, _) in seen} == {operation.label for operation in operations}, seen
    # The run reached real answers, not only refusals.
    statuses = {status for (_, status) in seen}
    assert statuses >= {200, 404, 422}, seen
    assert seen[("GET /v1/flows/{source}/{target}/offsets", 200)] > 0, seen
    assert seen[("GET /v1/flows/{source}/{target}/translate", 200)] > 0, seen
    assert seen[("POST /v1/flows/{source}/{target}/failover", 200)] > 0, seen
