"""`strait migrate`: switch a flow from a running MirrorMaker 2 to Strait in place and back, under steady load.

MM2 runs in dedicated mode from the pinned Kafka jars, on the same clusters and the same properties file as
Strait. Every record produced is a sequence number, so the remote topic tells exactly what was lost or copied
twice: nothing across two clean switches (MM2 -> Strait -> MM2), and after MM2 is killed with SIGKILL and Strait
takes over, exactly the records MM2 copied but had not committed.

A consumer group fails over to the target before, between and after the switches, and each one's answer (from
Strait's translator and from MM2's RemoteClusterUtils) is checked again after every later switch: it must point
exactly after the last record the group consumed. MM2's checkpoints are exact only where MM2 wrote an offset
sync, and with its default `offset.lag.max` that is every 100 records or when the load stops; so the groups of
the MM2 phases commit while the load is paused and MM2 has flushed its syncs. Strait's are exact anywhere, so the
group of the Strait phase commits under load.
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

import httpx

from shared.errors import KafkaOperationError
from shared.kafka.end_offsets import partition_watermarks, topic_end_offsets
from shared.kafka.factories import confluent_producer
from shared.kafka.group_offsets import CommittedOffset, GroupAdmin
from shared.kafka.partition_reader import read_all_partitions
from shared.localkafka import KafkaCluster
from shared.localkafka.mirror_maker import MirrorMakerProcess
from shared.localkafka.ports import free_port
from shared.records.connect_offsets import SourcePartitionKey
from shared.replication_policy import mm2_connect_offsets_topic
from tests.support.kafka_io import make_topic, read_to_end
from tests.support.mm2_client import translate_offsets
from tests.support.mm2_config import write_mm2_config
from tests.support.service_process import ServiceProcess
from tests.support.verify_oracle import assert_nothing_lost

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
        self._producing = threading.Event()
        self._producing.set()
        self._batch = threading.Lock()
        self.produced = 0

    def run(self) -> None:
        while not self._stopping.is_set():
            if not self._producing.wait(0.1):
                continue
            with self._batch:
                for _ in range(10):
                    number = str(self.produced).encode()
                    self._producer.produce(self._topic, key=number, value=number, partition=self.produced % PARTITIONS)
                    self.produced += 1
                self._producer.poll(0)
            time.sleep(self._pause_s)

    def pause(self) -> int:
        """Stop producing until `resume`, with every record so far acknowledged; how many there are."""
        with self._batch:
            self._producing.clear()
        assert self._producer.flush(30) == 0, "the load's records were not all acknowledged"
        return self.produced

    def resume(self) -> None:
        self._producing.set()

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


class FailoverCheck:
    """Consumer groups that stopped consuming on the source, and the target's answers for where they resume.

    A group's exact resume point on the target is right after the copy of the last record it consumed there (the
    records are unique numbers, so a copy is found by value)."""

    def __init__(self, a_props: Mapping[str, str], b_props: Mapping[str, str], topic: str, translator: str) -> None:
        self._a_props, self._b_props = a_props, b_props
        self._topic, self._remote = topic, f"{SOURCE}.{topic}"
        self._translator = translator
        self._source_groups = GroupAdmin.connect(SOURCE, a_props, timeout_s=30)
        self.exact: dict[str, dict[tuple[str, int], int]] = {}

    def start_group(self, group: str) -> None:
        """A group that has read nothing yet: it commits offset 0, so both tools know it from their start."""
        self._commit(group, dict.fromkeys(range(PARTITIONS), 0))

    def stop_group_at_the_end(self, group: str) -> None:
        """The group consumed everything the source holds now, committed, and stopped."""
        ends = partition_ends(self._a_props, self._topic)
        self._commit(group, ends)
        source = read_all_partitions(self._a_props, self._topic)
        last_consumed = {p: next(r.value for r in source[p] if r.offset == end - 1) for p, end in ends.items()}
        wait_until(lambda: self._copies_present(last_consumed), f"the target holds what {group} consumed")
        self.exact[group] = self._resume_points(last_consumed)

    def assert_every_group_resumes_exactly(self, moment: str, timeout_s: float = 90) -> None:
        """The translator and MM2's RemoteClusterUtils both answer each stopped group's exact resume point."""
        with httpx.Client(timeout=10) as client:
            for group, exact in self.exact.items():
                by_translator = self._translator_answer(client, group)
                deadline = time.monotonic() + timeout_s
                while by_translator != exact and time.monotonic() < deadline:
                    time.sleep(0.5)
                    by_translator = self._translator_answer(client, group)
                assert by_translator == exact, f"{moment}: {group} resumes at {exact}; translator: {by_translator}"
                by_mm2 = translate_offsets(self._b_props, SOURCE, group)
                assert by_mm2 == exact, f"{moment}: {group} resumes at {exact}; RemoteClusterUtils: {by_mm2}"

    def _commit(self, group: str, positions: Mapping[int, int]) -> None:
        offsets = {(self._topic, p): CommittedOffset(offset) for p, offset in positions.items()}
        errors = self._source_groups.alter_offsets({group: offsets})
        deadline = time.monotonic() + 30
        while errors and all(error.retriable for error in errors.values()) and time.monotonic() < deadline:
            time.sleep(0.5)  # a new cluster's group coordinator may still be loading
            errors = self._source_groups.alter_offsets({group: offsets})
        assert errors == {}

    def _translator_answer(self, client: httpx.Client, group: str) -> dict[tuple[str, int], int]:
        try:
            answer = client.get(f"{self._translator}/v1/flows/{SOURCE}/{TARGET}/offsets", params={"group": group})
        except httpx.TransportError:
            return {}
        if answer.status_code != 200:
            return {}
        return {(row["topic"], row["partition"]): row["offset"] for row in answer.json()["offsets"]}

    def _copies(self) -> dict[int, dict[bytes | None, int]]:
        """Per remote partition: value -> offset of its copy."""
        return {
            p: {record.value: record.offset for record in records}
            for p, records in read_all_partitions(self._b_props, self._remote).items()
        }

    def _copies_present(self, last_consumed: Mapping[int, bytes | None]) -> bool:
        copies = self._copies()
        return all(value in copies.get(p, {}) for p, value in last_consumed.items())

    def _resume_points(self, last_consumed: Mapping[int, bytes | None]) -> dict[tuple[str, int], int]:
        copies = self._copies()
        return {(self._remote, p): copies[p][value] + 1 for p, value in last_consumed.items()}


def wait_until(condition: Callable[[], bool], what: str, timeout_s: float = 120) -> None:
    """Poll `condition`; a retriable Kafka error while asking (a topic MM2 or Strait just made has no leader yet)
    counts as not yet."""
    deadline = time.monotonic() + timeout_s
    while not _holds(condition):
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.5)


def _holds(condition: Callable[[], bool]) -> bool:
    try:
        return condition()
    except KafkaOperationError as exc:
        if not exc.retriable:
            raise
        return False


def test_switching_between_mm2_and_strait_loses_nothing_and_copies_again_only_what_a_killed_mm2_left(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    a_props, b_props = cluster_a.client_properties(), cluster_b.client_properties()
    topic = f"migrate-{unique}"
    make_topic(a_props, topic, partitions=PARTITIONS)
    flow = f"{SOURCE}->{TARGET}"
    config = write_mm2_config(
        tmp_path / "mm2.properties",
        {SOURCE: cluster_a, TARGET: cluster_b},
        {
            flow: {
                "topics": topic,
                "groups": f"failover-{unique}-.*",
                "emit.checkpoints.interval.seconds": "1",
                "refresh.groups.interval.seconds": "5",
                "sync.group.offsets.enabled": "false",
                "refresh.topics.interval.seconds": "5",
            }
        },
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
    port = free_port()
    translator = ServiceProcess("offset_translator", config, logs, "--port", str(port)).start()
    failover = FailoverCheck(a_props, b_props, topic, f"http://127.0.0.1:{port}")
    before, between, after = (f"failover-{unique}-{moment}" for moment in ("before", "between", "after"))
    try:
        for group in (before, between, after):
            failover.start_group(group)
        load = SteadyLoad(a_props, topic)
        load.start()
        switch_and_check(a_props, b_props, topic, config, logs, load, failover, (before, between, after))
    finally:
        translator.stop()


def switch_and_check(
    a_props: Mapping[str, str],
    b_props: Mapping[str, str],
    topic: str,
    config: Path,
    logs: Path,
    load: SteadyLoad,
    failover: FailoverCheck,
    groups: tuple[str, str, str],
) -> None:
    remote, flow = f"{SOURCE}.{topic}", f"{SOURCE}->{TARGET}"
    before, between, after = groups
    mm2 = MirrorMakerProcess(config, log_path=logs / "mm2-first.log", clusters=[TARGET]).start()
    try:
        wait_until(lambda: remote_count(b_props, remote) > 1500, "MM2 mirrored 1500 records", timeout_s=180)
        produced = load.pause()
        wait_until(lambda: remote_count(b_props, remote) == produced, "MM2 copied everything")
        failover.stop_group_at_the_end(before)
        failover.assert_every_group_resumes_exactly("MM2, before the first switch")
        load.resume()
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
    checkpoint = ServiceProcess("checkpoint", config, logs).start()
    try:
        wait_until(lambda: remote_count(b_props, remote) > handed_to_strait + 1500, "Strait copied 1500 records")
        failover.stop_group_at_the_end(between)  # under load
        failover.assert_every_group_resumes_exactly("Strait, between the switches")
        code, _, stderr = strait_migrate("to-mm2", "--config", str(config))
        assert code == 1
        assert f"Strait's data-mirror is still running for {flow}" in stderr
    finally:
        assert checkpoint.stop() == 0, checkpoint.tail()
        assert data_mirror.stop() == 0, data_mirror.tail()

    code, results, stderr = strait_migrate("to-mm2", "--config", str(config))
    assert code == 0, stderr
    assert_handed_over(results, topic)
    handed_to_mm2 = remote_count(b_props, remote)

    mm2 = MirrorMakerProcess(config, log_path=logs / "mm2-again.log", clusters=[TARGET]).start()
    try:
        wait_until(lambda: remote_count(b_props, remote) > handed_to_mm2 + 1500, "MM2 resumed", timeout_s=180)
        produced = load.pause()
        wait_until(lambda: remote_count(b_props, remote) == produced, "MM2 copied everything")
        failover.stop_group_at_the_end(after)
        failover.assert_every_group_resumes_exactly("MM2, after the second switch")
        load.resume()
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
    # MM2, Strait, MM2 and Strait again wrote the one remote topic: the verifier finds every record, unchanged.
    verified = assert_nothing_lost(config, flow, topic, records=produced)
    assert verified.totals.duplicates == uncommitted_window
