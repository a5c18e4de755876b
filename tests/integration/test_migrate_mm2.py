"""`strait migrate`: switch a flow from a running MirrorMaker 2 to Strait in place and back, under steady load.

MM2 runs in dedicated mode from the pinned Kafka jars, on the same clusters and the same properties file as
Strait. Every record produced is a sequence number, so the remote topic tells exactly what was lost or copied
twice: nothing across two clean switches (MM2 -> Strait -> MM2), and after MM2 is killed with SIGKILL and Strait
takes over, exactly the records MM2 copied but had not committed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from shared.kafka.end_offsets import partition_watermarks, topic_end_offsets
from shared.kafka.factories import confluent_producer
from shared.kafka.read import read_all_partitions
from shared.localkafka import KafkaCluster
from shared.localkafka.mirror_maker import MirrorMakerProcess
from shared.records.connect_offsets import SourcePartitionKey
from shared.replication_policy import mm2_connect_offsets_topic
from tests.support.kafka_io import make_topic, read_to_end
from tests.support.mm2_config import write_mm2_config
from tests.support.service_process import ServiceProcess

SOURCE, TARGET = "east", "west"
PARTITIONS = 3


class SteadyLoad(threading.Thread):
    """Produces the numbers 0, 1, 2, ... (key and value) at about `rate` records a second until stopped."""

    def __init__(self, props: Mapping[str, str], topic: str, rate: int = 300) -> None:
        super().__init__(daemon=True)
        self._producer = confluent_producer(props, **{"enable.idempotence": True, "linger.ms": 5})
        self._topic = topic
        self._pause_s = 10 / rate
        self._stopping = threading.Event()
        self.produced = 0

    def run(self) -> None:
        while not self._stopping.is_set():
            for _ in range(10):
                number = str(self.produced).encode()
                self._producer.produce(self._topic, key=number, value=number, partition=self.produced % PARTITIONS)
                self.produced += 1
            self._producer.poll(0)
            time.sleep(self._pause_s)

    def finish(self) -> int:
        """Stop producing, wait for every acknowledgement, and say how many records there are."""
        self._stopping.set()
        self.join(10)
        assert self._producer.flush(30) == 0, "the load's records were not all acknowledged"
        return self.produced


def strait_migrate(*args: str) -> tuple[int, list[dict[str, Any]], str]:
    """Run `strait migrate ... --json` as a user would: (exit code, per-flow results, stderr)."""
    done = subprocess.run(
        [sys.executable, "-m", "services.cli", "migrate", *args, "--json", "--settle-s", "1"],
        capture_output=True,
        text=True,
        timeout=180,
    )
    return done.returncode, json.loads(done.stdout or "[]"), done.stderr


def assert_handed_over(results: list[dict[str, Any]], topic: str) -> None:
    """Every partition of `topic` had its position written. (The flow may hold more: MM2 and Strait always
    mirror `heartbeats` topics, and a test before this one on the same cluster may have made one.)"""
    [result] = results
    assert result["problems"] == [], result
    rows = [row for row in result["partitions"] if row["topic"] == topic]
    assert [(row["partition"], row["action"]) for row in rows] == [(p, "write") for p in range(PARTITIONS)], rows


def remote_count(props: Mapping[str, str], topic: str) -> int:
    return topic_end_offsets(props, [topic])[topic] or 0


def partition_ends(props: Mapping[str, str], topic: str) -> dict[int, int]:
    """Each partition's end offset: the records copied into it so far (the remote topic starts at 0)."""
    marks = partition_watermarks(props, {topic: PARTITIONS})
    return {partition: high for (_, partition), (_, high) in marks.items()}


def wait_until(condition: Callable[[], bool], what: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.5)


def test_switching_between_mm2_and_strait_loses_nothing_and_copies_again_only_what_a_killed_mm2_left(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    a_props, b_props = cluster_a.client_properties(), cluster_b.client_properties()
    topic = f"migrate-{unique}"
    remote = f"{SOURCE}.{topic}"
    make_topic(a_props, topic, partitions=PARTITIONS)
    flow = f"{SOURCE}->{TARGET}"
    config = write_mm2_config(
        tmp_path / "mm2.properties",
        {SOURCE: cluster_a, TARGET: cluster_b},
        {flow: {"topics": topic, "sync.group.offsets.enabled": "false", "refresh.topics.interval.seconds": "5"}},
        {
            f"{TARGET}->{SOURCE}.enabled": "false",
            "emit.heartbeats.enabled": "false",
            "sync.topic.acls.enabled": "false",
            f"{TARGET}.offset.flush.interval.ms": "1000",
            "config.storage.replication.factor": "1",
            "offset.storage.replication.factor": "1",
            "status.storage.replication.factor": "1",
        },
    )
    logs = tmp_path / "logs"
    logs.mkdir()
    load = SteadyLoad(a_props, topic)
    load.start()
    mm2 = MirrorMakerProcess(config, log_path=logs / "mm2-first.log", clusters=[TARGET]).start()
    try:
        wait_until(lambda: remote_count(b_props, remote) > 1500, "MM2 mirrored 1500 records", timeout_s=180)
        code, _, stderr = strait_migrate("from-mm2", "--config", str(config))
        assert code == 1
        assert f"MM2 is still running: its worker group {SOURCE}-mm2 on cluster {TARGET}" in stderr
    finally:
        mm2.stop()

    mm2_keys = [
        record.key
        for records in read_all_partitions(b_props, mm2_connect_offsets_topic(SOURCE)).values()
        for record in records
        if record.key and record.key.startswith(b'["MirrorSourceConnector"')
    ]
    assert mm2_keys, "MM2 stored no copy position"
    assert {SourcePartitionKey.decode(key).encode() for key in mm2_keys} == set(mm2_keys)  # Strait writes MM2's bytes

    code, results, stderr = strait_migrate("from-mm2", "--config", str(config))
    assert code == 0, stderr
    assert_handed_over(results, topic)
    handed_to_strait = remote_count(b_props, remote)

    data_mirror = ServiceProcess("data_mirror", config, logs).start()
    try:
        wait_until(lambda: remote_count(b_props, remote) > handed_to_strait + 1500, "Strait copied 1500 records")
        code, _, stderr = strait_migrate("to-mm2", "--config", str(config))
        assert code == 1
        assert f"Strait's data-mirror is still running for {flow}" in stderr
    finally:
        assert data_mirror.stop() == 0, data_mirror.tail()

    code, results, stderr = strait_migrate("to-mm2", "--config", str(config))
    assert code == 0, stderr
    assert_handed_over(results, topic)
    handed_to_mm2 = remote_count(b_props, remote)

    mm2 = MirrorMakerProcess(config, log_path=logs / "mm2-again.log", clusters=[TARGET]).start()
    try:
        wait_until(lambda: remote_count(b_props, remote) > handed_to_mm2 + 1500, "MM2 resumed", timeout_s=180)
        code, results, stderr = strait_migrate("from-mm2", "--config", str(config), "--dry-run")
        assert code == 1, "a dry run refuses too while MM2 runs"
    finally:
        mm2.kill()  # a crash: MM2's stored positions trail what it copied by up to its commit interval
    time.sleep(2)  # requests the killed JVM had sent are written by now
    copied_by_mm2 = partition_ends(b_props, remote)

    # The killed worker stays in its group until the group's session times out: until then MM2 counts as running.
    deadline = time.monotonic() + 90
    while (done := strait_migrate("from-mm2", "--config", str(config)))[0] != 0 and time.monotonic() < deadline:
        assert "MM2 is still running" in done[2], done[2]
        time.sleep(2)
    code, results, stderr = done
    assert code == 0, stderr
    assert_handed_over(results, topic)
    resumed_at = {row["partition"]: row["mm2_next_offset"] for row in results[0]["partitions"] if row["topic"] == topic}
    uncommitted_window = sum(copied_by_mm2[p] - resumed_at[p] for p in range(PARTITIONS))

    data_mirror = ServiceProcess("data_mirror", config, logs).start()
    try:
        produced = load.finish()
        expected = produced + uncommitted_window
        wait_until(lambda: remote_count(b_props, remote) >= expected, f"all {produced} records mirrored", 180)
        time.sleep(3)  # anything else copied twice would arrive now
    finally:
        assert data_mirror.stop() == 0, data_mirror.tail()

    numbers = Counter(int(record.value or b"-1") for record in read_to_end(b_props, remote))
    copied_twice = sum(seen - 1 for seen in numbers.values() if seen > 1)
    lost = sorted(set(range(produced)) - set(numbers))
    print(f"\nMM2 killed: {uncommitted_window} records copied but not committed by MM2, {copied_twice} copied twice")
    assert lost[:10] == [], f"{len(lost)} lost"
    # Clean switches copy nothing twice; after the kill exactly MM2's uncommitted records are copied again.
    assert copied_twice == uncommitted_window
    assert sum(numbers.values()) == produced + uncommitted_window
