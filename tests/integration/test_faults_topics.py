"""Topology changes and lost permissions while data-mirror (and topic-sync) run as processes and a producer writes.

What a user must see: the remote topic deleted on the target comes back with every source record; a deleted
source topic stops only itself and, recreated, is mirrored from its first record; partitions added mid-stream
are created and mirrored; a revoked WRITE ACL pauses the flow with a clear error and it resumes on its own.
Every record value is unique, so tests/support/replica_check counts lost and duplicated records exactly.
Each test uses its own cluster aliases, so its remote topics, progress and lease groups are its own.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicCollection, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    NewPartitions,
    OffsetSpec,
    ResourcePatternType,
    ResourceType,
)

from shared.kafka.factories import confluent_admin, confluent_producer
from shared.kafka.topic_admin import TopicAdmin
from shared.localkafka import KafkaCluster
from tests.integration.conftest import MIRROR_USER
from tests.integration.test_topic_sync import write_config
from tests.support.kafka_io import delete_topic, make_topic, produce
from tests.support.mirror_status import mirror_status
from tests.support.replica_check import ReplicaReport, compare_topics
from tests.support.service_process import ServiceProcess

MIRROR_ENV = {"STRAIT_COMMIT_INTERVAL_MS": "300", "STRAIT_STATUS_INTERVAL_S": "1", "STRAIT_BLOCKED_RETRY_S": "2"}


class Writer:
    """Writes records with unique values (`<tag>:<partition>:<seq>`) round-robin over `partitions` until stopped."""

    def __init__(self, props: dict[str, str], topic: str, partitions: int, *, tag: str = "w", rate: int = 300) -> None:
        self.topic, self.partitions, self.tag = topic, partitions, tag
        self._producer = confluent_producer(props, **{"enable.idempotence": True, "linger.ms": 5})
        self._pause_s = 1 / rate
        self._stop = threading.Event()
        self._errors: list[KafkaError] = []
        self.sent = 0
        self._thread = threading.Thread(target=self._run, name=f"writer-{topic}", daemon=True)

    def start(self) -> Writer:
        """Start writing in a background thread."""
        self._thread.start()
        return self

    def grow(self, partitions: int) -> None:
        """Write to `partitions` partitions from now on (once this producer knows them)."""
        deadline = time.monotonic() + 30
        while len(self._producer.list_topics(self.topic, timeout=10).topics[self.topic].partitions) < partitions:
            assert time.monotonic() < deadline, f"the producer never saw {partitions} partitions of {self.topic}"
            time.sleep(0.2)
        self.partitions = partitions

    def _on_delivery(self, err: KafkaError | None, _msg: object) -> None:
        if err is not None:
            self._errors.append(err)

    def _run(self) -> None:
        while not self._stop.is_set():
            partition = self.sent % self.partitions
            value = f"{self.tag}:{partition}:{self.sent}".encode()
            self._producer.produce(self.topic, value=value, partition=partition, on_delivery=self._on_delivery)
            self._producer.poll(0)
            self.sent += 1
            time.sleep(self._pause_s)

    def close(self) -> None:
        """Stop writing if it still does (for `finally`); delivery failures are not checked here."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)
        self._producer.flush(10)

    def stop(self) -> int:
        """Stop, wait for every delivery and return how many records were written."""
        self._stop.set()
        self._thread.join(timeout=30)
        assert self._producer.flush(30) == 0, f"records to {self.topic} not delivered"
        assert not self._errors, f"the writer's deliveries failed: {self._errors[0]}"
        return self.sent


def wait_until(check: Callable[[], bool], timeout_s: float, what: str, *processes: ServiceProcess) -> None:
    """Poll `check` until it holds; on timeout fail with `what` and the processes' log tails."""
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            tails = "\n".join(f"--- {p.package}:\n{p.tail(4000)}" for p in processes)
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}\n{tails}")
        time.sleep(0.5)


def _records_in(props: dict[str, str], topic: str) -> int:
    """Sum of the topic's end offsets (0 while it does not exist or its partitions are not known yet)."""
    admin: Any = confluent_admin(props)  # (the client's type stubs want isolation_level, which has a default)
    try:
        found = admin.list_topics(topic, timeout=10).topics.get(topic)
        if found is None or found.error is not None or not found.partitions:
            return 0
        latest = {TopicPartition(topic, p): OffsetSpec.latest() for p in found.partitions}
        futures = admin.list_offsets(latest, request_timeout=10)
        return sum(int(future.result(timeout=15).offset) for future in futures.values())
    except KafkaException:
        return 0


def _holds_more_than(props: dict[str, str], topic: str, records: int) -> bool:
    return _records_in(props, topic) > records


def caught_up(
    source: dict[str, str], topic: str, target: dict[str, str], remote: str, timeout_s: float, *procs: ServiceProcess
) -> ReplicaReport:
    """Compare until nothing is lost (mirroring may still be catching up); the last report either way."""
    deadline = time.monotonic() + timeout_s
    while True:
        report = compare_topics(source, topic, target, remote, timeout_s=60)
        if report.lost == 0 or time.monotonic() > deadline:
            if report.lost:
                tails = "\n".join(f"--- {p.package}:\n{p.tail(4000)}" for p in procs)
                print(tails)
            return report
        time.sleep(2)


def events(process: ServiceProcess, event: str) -> list[dict[str, object]]:
    """The process's log lines with `event`."""
    return [entry for entry in process.logs() if entry.get("event") == event]


def _topic_id(props: dict[str, str], topic: str) -> str | None:
    admin = confluent_admin(props)
    try:
        return str(admin.describe_topics(TopicCollection([topic]))[topic].result(timeout=10).topic_id)
    except KafkaException:  # not there (yet)
        return None


def _private_config(tmp_path: Path, a: KafkaCluster, b: KafkaCluster, unique: str, topics: str) -> tuple[str, str]:
    source, target = f"S{unique}", f"T{unique}"
    write_config(
        tmp_path / "mm2.properties",
        {source: (a, None), target: (b, None)},
        {f"{source}->{target}": {"topics": topics, "heartbeats.replication.enabled": "false"}},
    )
    return source, target


# -- the remote topic deleted on the target, partitions added to the source ------------------------------


@pytest.mark.slow
def test_a_deleted_remote_topic_comes_back_complete_and_partitions_added_mid_stream_are_mirrored(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    """Two topics of one flow, a producer writing to each, each meets a change at once: the remote topic of one is
    deleted on the target (topic-sync makes it again and data-mirror copies every source record again), the other
    gets three more partitions on the source (made on the remote topic and mirrored)."""
    a, b = cluster_a.client_properties(), cluster_b.client_properties()
    deleted, grown = f"rd-{unique}", f"pa-{unique}"
    source, _ = _private_config(tmp_path, cluster_a, cluster_b, unique, f"{deleted},{grown}")
    config = tmp_path / "mm2.properties"
    remote = {topic: f"{source}.{topic}" for topic in (deleted, grown)}
    writers = {topic: Writer(a, topic, partitions=2, tag=topic[:2]) for topic in (deleted, grown)}
    for topic in writers:
        make_topic(a, topic, partitions=2)
    topic_sync = ServiceProcess("topic_sync", config, tmp_path).start()
    mirror = ServiceProcess("data_mirror", config, tmp_path, env=MIRROR_ENV).start()
    try:
        mirror.wait_for_log("driver_ready", timeout_s=180)
        for writer in writers.values():
            writer.start()
        for name in remote.values():
            wait_until(partial(_holds_more_than, b, name, 300), 180, f"records in {name}", mirror, topic_sync)
        old_id = _topic_id(b, remote[deleted])
        delete_topic(b, remote[deleted])
        deleted_at = time.monotonic()
        print(f"\ndeleted {remote[deleted]} after {writers[deleted].sent} records were written")
        admin = confluent_admin(a)
        for future in admin.create_partitions([NewPartitions(grown, 5)]).values():
            future.result(timeout=30)
        writers[grown].grow(5)

        def remote_partitions() -> int:
            listed = TopicAdmin("B", b, timeout_s=30).list_topics()
            return listed[remote[grown]].partitions if remote[grown] in listed else 0

        wait_until(lambda: remote_partitions() == 5, 60, "the new partitions on the remote topic", topic_sync)
        wait_until(  # within 90 s of the deletion, as when this case ran alone
            lambda: _topic_id(b, remote[deleted]) not in (None, old_id),
            max(1.0, 90 - (time.monotonic() - deleted_at)),
            "the remote topic recreated",
            topic_sync,
            mirror,
        )
        wait_until(lambda: _records_in(b, remote[deleted]) > 0, 90, "records in the recreated topic", mirror)
        time.sleep(3)  # the producers keep writing into the recreated topic and the new partitions
        written = {topic: writer.stop() for topic, writer in writers.items()}
        for topic, change in ((deleted, "remote topic deleted"), (grown, "partitions added")):
            report = caught_up(a, topic, b, remote[topic], 120, mirror, topic_sync)
            print(report.line(f"{change} ({written[topic]} written)"))
            assert report.lost == 0, report.lost_examples
            assert report.moved == 0
        assert mirror.stop() == 0, mirror.tail()
        assert topic_sync.stop() == 0, topic_sync.tail()
    finally:
        for writer in writers.values():
            writer.close()
        for process in (mirror, topic_sync):
            process.kill()


# -- a source topic deleted, then recreated --------------------------------------------------------------


@pytest.mark.slow
def test_source_topic_deleted_stops_only_itself_and_a_recreated_one_is_mirrored_from_its_start(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    a, b = cluster_a.client_properties(), cluster_b.client_properties()
    keep, gone = f"sd-{unique}-keep", f"sd-{unique}-gone"
    source, target = _private_config(tmp_path, cluster_a, cluster_b, unique, f"sd-{unique}-.*")
    flow, config = f"{source}->{target}", tmp_path / "mm2.properties"
    for topic in (keep, gone):
        make_topic(a, topic, partitions=2)
        make_topic(b, f"{source}.{topic}", partitions=2)  # what topic-sync does
    produce(a, gone, [(None, f"old:{i}".encode()) for i in range(600)])
    writer = Writer(a, keep, partitions=2)
    mirror = ServiceProcess("data_mirror", config, tmp_path, env=MIRROR_ENV).start()
    try:
        mirror.wait_for_log("driver_ready", timeout_s=180)
        writer.start()
        wait_until(lambda: _records_in(b, f"{source}.{gone}") >= 600, 180, "the first topic mirrored", mirror)
        delete_topic(a, gone)
        errors_before = len(events(mirror, "mirror_error"))
        mirrored_at_delete = _records_in(b, f"{source}.{keep}")

        def reported_gone() -> bool:
            status = mirror_status(b, flow)
            return status is not None and gone in status.details.get("source_topics_gone", [])

        wait_until(reported_gone, 60, f"status naming {gone} as gone", mirror)
        time.sleep(5)  # let it run a while without the topic
        assert _records_in(b, f"{source}.{keep}") > mirrored_at_delete, "the other topic kept flowing"
        storm = len(events(mirror, "mirror_error")) - errors_before
        print(f"\nerrors logged after the source topic was deleted: {storm}")
        assert storm <= 3, [e.get("error") for e in events(mirror, "mirror_error")][-5:]

        # Recreated with the same name and fewer records than were mirrored before: all of them arrive.
        make_topic(a, gone, partitions=2)
        for p in range(2):
            produce(a, gone, [(None, f"new:{p}:{i}".encode()) for i in range(150)], partition=p)
        report = caught_up(a, gone, b, f"{source}.{gone}", 90, mirror)
        print(report.line("recreated source topic"))
        assert report.lost == 0, report.lost_examples
        assert report.source_records == 300

        written = writer.stop()
        report = caught_up(a, keep, b, f"{source}.{keep}", 90, mirror)
        print(report.line(f"the other topic ({written} written)"))
        assert report.lost == 0, report.lost_examples
        assert mirror.stop() == 0, mirror.tail()
    finally:
        writer.close()
        mirror.kill()


@pytest.mark.slow
def test_topics_made_again_while_data_mirror_was_stopped_are_copied_from_their_start(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    a, b = cluster_a.client_properties(), cluster_b.client_properties()
    topic = f"rc-{unique}"
    source, _ = _private_config(tmp_path, cluster_a, cluster_b, unique, topic)
    remote, config = f"{source}.{topic}", tmp_path / "mm2.properties"
    make_topic(a, topic, partitions=2)
    make_topic(b, remote, partitions=2)
    for p in range(2):
        produce(a, topic, [(None, f"old:{p}:{i}".encode()) for i in range(300)], partition=p)
    with ServiceProcess("data_mirror", config, tmp_path, env=MIRROR_ENV) as first:
        wait_until(lambda: _records_in(b, remote) >= 600, 180, "the first incarnation mirrored", first)
        assert first.stop() == 0, first.tail()

    # While it is stopped both topics are deleted and made again; the new source holds MORE records than the
    # committed position, so only the topic ids kept with the progress tell that these are other records.
    delete_topic(a, topic)
    delete_topic(b, remote)
    wait_until(lambda: _topic_id(a, topic) is None and _topic_id(b, remote) is None, 60, "both topics deleted")
    make_topic(a, topic, partitions=2)
    make_topic(b, remote, partitions=2)
    for p in range(2):
        produce(a, topic, [(None, f"new:{p}:{i}".encode()) for i in range(500)], partition=p)
    with ServiceProcess("data_mirror", config, tmp_path, env=MIRROR_ENV) as second:
        report = caught_up(a, topic, b, remote, 120, second)
        print(report.line("both topics made again while stopped"))
        assert report.lost == 0, report.lost_examples
        assert (report.duplicates, report.moved) == (0, 0)
        recreated = second.wait_for_log("topic_recreated_copying_again", timeout_s=10)
        assert (recreated["source_recreated"], recreated["remote_recreated"]) == (True, True), recreated
        assert second.stop() == 0, second.tail()


# -- the mirror's user loses WRITE on the target ---------------------------------------------------------


def _binding(resource: ResourceType, name: str, pattern: ResourcePatternType, operation: AclOperation) -> AclBinding:
    return AclBinding(resource, name, pattern, f"User:{MIRROR_USER.name}", "*", operation, AclPermissionType.ALLOW)


@pytest.mark.slow
def test_lost_write_permission_pauses_the_flow_with_a_clear_error_and_it_resumes(
    cluster_a: KafkaCluster, secure_cluster: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    a, s = cluster_a.client_properties(), secure_cluster.client_properties()
    source, target = f"A{unique}", f"S{unique}"
    flow, topic = f"{source}->{target}", f"wa-{unique}"
    remote = f"{source}.{topic}"
    config = write_config(
        tmp_path / "mm2.properties",
        {source: (cluster_a, None), target: (secure_cluster, MIRROR_USER)},
        {flow: {"topics": topic, "heartbeats.replication.enabled": "false"}},
    )
    make_topic(a, topic, partitions=2)
    make_topic(s, remote, partitions=2)  # created by the admin, as topic-sync with its own user would
    admin = confluent_admin(s)
    write = _binding(ResourceType.TOPIC, remote, ResourcePatternType.LITERAL, AclOperation.WRITE)
    grants = [
        _binding(ResourceType.TOPIC, "strait.", ResourcePatternType.PREFIXED, AclOperation.ALL),
        _binding(ResourceType.GROUP, "strait-", ResourcePatternType.PREFIXED, AclOperation.ALL),
        _binding(ResourceType.TOPIC, remote, ResourcePatternType.LITERAL, AclOperation.DESCRIBE),
        _binding(ResourceType.TOPIC, remote, ResourcePatternType.LITERAL, AclOperation.DESCRIBE_CONFIGS),
        write,
    ]
    for future in admin.create_acls(grants).values():
        future.result(timeout=30)
    writer = Writer(a, topic, partitions=2, rate=200)
    mirror = ServiceProcess("data_mirror", config, tmp_path, env=MIRROR_ENV).start()
    try:
        mirror.wait_for_log("driver_ready", timeout_s=180)
        writer.start()
        wait_until(lambda: _records_in(s, remote) > 200, 180, "records in the remote topic", mirror)
        revoke = AclBindingFilter(
            ResourceType.TOPIC,
            remote,
            ResourcePatternType.LITERAL,
            f"User:{MIRROR_USER.name}",
            "*",
            AclOperation.WRITE,
            AclPermissionType.ALLOW,
        )
        for deleted in admin.delete_acls([revoke]).values():
            assert len(deleted.result(timeout=30)) == 1
        refused = mirror.wait_for_log("record_refused_partition_stopped", timeout_s=90)
        assert "TOPIC_AUTHORIZATION_FAILED" in str(refused["reason"]), refused
        assert remote in str(refused["reason"]), refused

        def degraded() -> bool:
            status = mirror_status(s, flow)
            return status is not None and status.state == "degraded"

        wait_until(degraded, 60, "status degraded", mirror)
        status = mirror_status(s, flow)
        assert status is not None
        assert status.last_error is not None
        assert "TOPIC_AUTHORIZATION_FAILED" in status.last_error, status.last_error
        assert remote in status.last_error, status.last_error
        assert {entry["topic"] for entry in status.details["blocked"]} == {topic}, status.details
        print(f"\nstatus while refused: {status.state}: {status.last_error}")
        time.sleep(5)  # several retries while still refused: still paused, nothing skipped

        for future in admin.create_acls([write]).values():
            future.result(timeout=30)
        mirror.wait_for_log("partition_resumed", timeout_s=90)
        time.sleep(2)
        written = writer.stop()
        report = caught_up(a, topic, s, remote, 120, mirror)
        print(report.line(f"WRITE revoked and granted again ({written} written)"))
        assert report.lost == 0, report.lost_examples

        def running() -> bool:
            status = mirror_status(s, flow)
            return status is not None and status.state == "running"

        wait_until(running, 60, "status running again", mirror)
        assert mirror.stop() == 0, mirror.tail()
    finally:
        writer.close()
        mirror.kill()
