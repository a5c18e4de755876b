"""`strait status`, `strait translate` and `strait failover` against real clusters and a running translator."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from confluent_kafka import ConsumerGroupTopicPartitions

from shared.control import ControlPublisher, StatusReporter
from shared.kafka.factories import confluent_admin
from shared.localkafka import KafkaCluster
from shared.localkafka.ports import free_port
from shared.records import Checkpoint, Heartbeat
from tests.support.kafka_io import make_topic, produce
from tests.support.mm2_client import translate_offsets
from tests.support.mm2_config import write_mm2_config
from tests.support.service_process import ServiceProcess

TOKEN = "cli-integration-token"


def strait(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The `strait` command as an operator runs it."""
    return subprocess.run(
        [sys.executable, "-m", "services.cli", *args],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
    )


class Setup:
    """A private flow S->T from cluster A to cluster B, its config file, and helpers to write its topics."""

    def __init__(self, a: KafkaCluster, b: KafkaCluster, unique: str, tmp_path: Path) -> None:
        self.source, self.target = f"S{unique}", f"T{unique}"
        self.config = write_mm2_config(
            tmp_path / "mm2.properties", {self.source: a, self.target: b}, {f"{self.source}->{self.target}": {}}
        )
        self.b = b.client_properties()
        self.tmp_path = tmp_path

    def remote(self, topic: str) -> str:
        return f"{self.source}.{topic}"

    def write_checkpoints(self, checkpoints: list[Checkpoint]) -> None:
        topic = f"{self.source}.checkpoints.internal"
        make_topic(self.b, topic, 1, **{"cleanup.policy": "compact"})
        produce(self.b, topic, [(c.record_key(), c.record_value()) for c in checkpoints], partition=0)


@pytest.fixture
def setup(cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path) -> Setup:
    return Setup(cluster_a, cluster_b, unique, tmp_path)


@pytest.fixture
def translator_url(setup: Setup) -> Iterator[str]:
    """`strait-offset-translator` running as a process for the flow, with a token, ready."""
    port = free_port()
    process = ServiceProcess(
        "offset_translator",
        setup.config,
        setup.tmp_path,
        "--port",
        str(port),
        env={"STRAIT_TRANSLATOR_TOKEN": TOKEN},
    )
    with process:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while True:
            try:
                if httpx.get(f"{url}/ready", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, process.tail()
            time.sleep(0.3)
        yield url


async def test_status_reads_each_target_directly(setup: Setup, unique: str) -> None:
    publisher = ControlPublisher(setup.b, replication_factor=1)
    await publisher.start()
    try:
        await StatusReporter(
            [publisher],
            service="data-mirror",
            instance_id=f"dm-{unique}",
            flow=f"{setup.source}->{setup.target}",
            snapshot=lambda: ("running", "copy: record too large for A.big", {"records_behind": 77, "topics": 2}),
        ).publish()
    finally:
        await publisher.stop()
    beat = Heartbeat(setup.source, setup.target, int(time.time() * 1000) - 5000)
    make_topic(setup.b, setup.remote("heartbeats"), 1)
    produce(setup.b, setup.remote("heartbeats"), [(beat.record_key(), beat.record_value())], partition=0)

    result = await asyncio.to_thread(strait, "status", "--config", str(setup.config), "--json")
    assert result.returncode == 0, result.stderr
    [flow] = json.loads(result.stdout)["flows"]
    assert flow["flow"] == f"{setup.source}->{setup.target}"
    assert flow["state"] == "running"
    assert flow["records_behind"] == 77
    assert flow["heartbeat_age_s"] >= 5
    instance = f"dm-{unique}/{setup.source}->{setup.target}"
    assert [i["instance"] for i in flow["instances"]] == [instance]
    assert flow["last_errors"] == [f"data-mirror/{instance}: copy: record too large for A.big"]

    table = await asyncio.to_thread(strait, "status", "--config", str(setup.config))
    assert table.returncode == 0, table.stderr
    assert f"dm-{unique}" in table.stdout
    assert "record too large" in table.stdout


def test_translate_directly_through_the_translator_and_by_mm2_agree(
    setup: Setup, unique: str, translator_url: str
) -> None:
    group = f"g-{unique}"
    setup.write_checkpoints(
        [
            Checkpoint(group, setup.remote("orders"), 0, 100, 90, "meta"),
            Checkpoint(group, setup.remote("orders"), 1, 5, 4),
            Checkpoint(group, setup.remote("orders"), 0, 130, 118, "meta2"),
        ]
    )
    common = ("translate", "--group", group, "--from", setup.source, "--to", setup.target, "--json")
    direct = strait(*common, "--config", str(setup.config))
    assert direct.returncode == 0, direct.stderr
    deadline = time.monotonic() + 60
    while True:
        served = strait(*common, "--translator", translator_url)
        if served.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert served.returncode == 0, served.stderr

    def rows(output: str) -> list[tuple[str, int, int, int, str]]:
        return [
            (o["topic"], o["partition"], o["offset"], o["upstream_offset"], o["metadata"])
            for o in json.loads(output)["offsets"]
        ]

    assert rows(direct.stdout) == rows(served.stdout)
    mm2 = translate_offsets(setup.b, setup.source, group)
    assert (
        {(t, p): o for t, p, o, _, _ in rows(direct.stdout)}
        == mm2
        == {
            (setup.remote("orders"), 0): 118,
            (setup.remote("orders"), 1): 4,
        }
    )
    missing = strait(
        "translate", "--group", "nobody", "--from", setup.source, "--to", setup.target, "--config", str(setup.config)
    )
    assert missing.returncode == 1
    assert "no checkpoint of group 'nobody'" in missing.stderr


def test_failover_through_the_cli(setup: Setup, unique: str, translator_url: str) -> None:
    group = f"fo-{unique}"
    remote = setup.remote(f"t-{unique}")
    make_topic(setup.b, remote, 2)
    for partition in (0, 1):
        produce(setup.b, remote, [(None, b"v")] * 10, partition=partition)
    setup.write_checkpoints([Checkpoint(group, remote, 0, 9, 7), Checkpoint(group, remote, 1, 3, 3)])
    base = ("failover", "--group", group, "--from", setup.source, "--to", setup.target, "--translator", translator_url)

    def committed() -> dict[int, int]:
        admin = confluent_admin(setup.b)
        answer = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(30)
        return {tp.partition: tp.offset for tp in answer.topic_partitions or [] if tp.offset >= 0}

    unauthorized = strait(*base, "--dry-run", env={"STRAIT_TRANSLATOR_TOKEN": ""})
    assert unauthorized.returncode == 1
    assert "translator: 401" in unauthorized.stderr

    deadline = time.monotonic() + 60
    while True:
        dry = strait(*base, "--dry-run", "--token", TOKEN, "--json")
        if dry.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["applied"] is False
    assert committed() == {}

    applied = strait(*base, "--token", TOKEN)
    assert applied.returncode == 0, applied.stderr
    assert "offsets written" in applied.stdout
    assert committed() == {0: 7, 1: 3}

    again = strait(*base, "--token", TOKEN, "--json")
    assert {p["action"] for p in json.loads(again.stdout)["partitions"]} == {"unchanged"}
