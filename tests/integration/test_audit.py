"""The audit service against real brokers: it verifies each range data-mirror copies as it lands, exports what it
verified, and reports a range the target lost (here deleted with DeleteRecords before the audit read it) exactly:
counted in `strait_audit_missing_total`, named in its status, and turned into a degraded state. On a flow with
transforms it does the same against what the flow makes of each source record."""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import TopicPartition

from shared.control import ServiceStatus, read_statuses
from shared.control.topic_names import progress_topic
from shared.kafka.factories import confluent_admin, confluent_producer
from shared.localkafka import KafkaCluster
from shared.localkafka.ports import free_port
from shared.records.offset_sync import OffsetSync
from shared.records.progress import ProgressKey, encode_progress
from tests.support.chain_flow import CHAIN, dropped_by_chain, transformed_source
from tests.support.kafka_io import consume_all, make_topic, produce
from tests.support.metrics_page import metric
from tests.support.mm2_config import write_mm2_config
from tests.support.progress import wait_for_progress
from tests.support.service_process import ServiceProcess
from tests.support.verify_oracle import assert_nothing_lost
from tests.support.waiting import wait_until


def test_the_audit_verifies_new_ranges_and_reports_records_the_target_lost(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    topic, remote = f"audited-{unique}", f"A.audited-{unique}"
    a, b = cluster_a.client_properties(), cluster_b.client_properties()
    make_topic(a, topic)
    make_topic(b, remote)
    config = write_mm2_config(
        tmp_path / "mm2.properties", {"A": cluster_a, "B": cluster_b}, {"A->B": {"topics": topic}}
    )
    port = free_port()
    env = {"STRAIT_AUDIT_INTERVAL_S": "1", "STRAIT_STATUS_INTERVAL_S": "1"}
    produce(a, topic, [(None, f"first-{i}".encode()) for i in range(50)], partition=0)
    mirrored = ServiceProcess("data_mirror", config, tmp_path, env={"STRAIT_COMMIT_INTERVAL_MS": "300"})
    audited = ServiceProcess("audit", config, tmp_path, "--metrics-port", str(port), "--flows", "A->B", env=env)
    with mirrored as mirror:
        consume_all(b, remote, expected=50, timeout_s=120)
        # The audit starts once the mirror has reported the 50 copied: it watches the partition from the mirror's
        # position when it first sees it (a position seen mid-copy would make it verify part of the first 50)...
        wait_for_progress(b, "A", "A->B", topic, 0, 50)
        with audited as audit:
            wait_until(lambda: metric(port, "strait_audit_verified_offset", topic=topic) == 50, 120, "audit watching")
            # ... and verifies each range copied after that.
            produce(a, topic, [(None, f"second-{i}".encode()) for i in range(100)], partition=0)
            wait_until(lambda: metric(port, "strait_audit_verified_offset", topic=topic) == 150, 120, "second range")
            assert metric(port, "strait_audit_records_verified_total", flow="A->B") == 100
            assert metric(port, "strait_audit_missing_total", flow="A->B") == 0
            assert_nothing_lost(config, "A->B", topic, records=150)  # the copy so far, record by record

            # Copy 30 more, delete them on the target before the audit reads them.
            _lost_before_the_audit_read_it(
                audit,
                lambda: produce(a, topic, [(None, f"third-{i}".encode()) for i in range(30)], partition=0),
                b,
                remote,
                180,
            )
            wait_until(lambda: metric(port, "strait_audit_missing_total", flow="A->B") == 30, 120, "the loss found")
            assert metric(port, "strait_audit_altered_total", flow="A->B") == 0
            assert metric(port, "strait_audit_records_verified_total", flow="A->B") == 100
            status = _degraded(b)
            assert re.search(
                rf"30 records missing .*{re.escape(topic)}-0 missing 150-179 \(30\)", status.last_error or ""
            )
            assert status.details["audit"]["missing"] == 30
            assert audit.stop() == 0
        assert mirror.stop() == 0


def _lost_before_the_audit_read_it(
    audit: ServiceProcess, write: Callable[[], None], b: dict[str, str], remote: str, end: int
) -> None:
    """Hold the audit, `write` more to the source, wait for the mirror to copy it (the remote partition's end at
    `end`), delete the remote partition up to there, and let the audit go on."""
    assert audit.popen is not None
    os.killpg(audit.popen.pid, signal.SIGSTOP)
    try:
        write()
        consume_all(b, remote, expected=end, timeout_s=120)
        time.sleep(1)  # the mirror commits its progress for them (every 300 ms)
        admin = confluent_admin(b)
        admin.delete_records([TopicPartition(remote, 0, end)])[TopicPartition(remote, 0, end)].result(30)
    finally:
        os.killpg(audit.popen.pid, signal.SIGCONT)


def _degraded(b: dict[str, str]) -> ServiceStatus:
    """The audit's status of A->B once it is degraded."""

    def degraded() -> ServiceStatus | None:
        found = [s for s in read_statuses(b).values() if s.service == "audit" and s.flow == "A->B"]
        return next((s for s in found if s.state == "degraded"), None)

    wait_until(lambda: degraded() is not None, 60, "a degraded audit status")
    status = degraded()
    assert status is not None
    return status


def test_the_audit_names_a_record_altered_on_the_target_by_source_and_target_offset(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    """No mirror: the test writes what data-mirror would (the remote topic's records, its progress, an offset sync)
    with record 25 changed on the target. The audit watches from offset 20 and finds 25 altered, nothing missing."""
    topic, remote = f"audited-alt-{unique}", f"A.audited-alt-{unique}"
    a, b = cluster_a.client_properties(), cluster_b.client_properties()
    make_topic(a, topic)
    make_topic(b, remote)
    make_topic(a, "mm2-offset-syncs.B.internal", 1, **{"cleanup.policy": "compact"})  # no-op if it exists
    make_topic(b, progress_topic("A"), 1, **{"cleanup.policy": "compact"})
    sync = OffsetSync(topic, 0, 0, 0)
    produce(a, "mm2-offset-syncs.B.internal", [(sync.record_key(), sync.record_value())])

    written_at = int(time.time() * 1000)  # recent: a broker deletes records older than its retention (7 days)

    def write(first: int, end: int, altered: int | None = None) -> None:
        records = [(f"k{i}".encode(), f"v{i}".encode()) for i in range(first, end)]
        copies = [(k, b"changed" if first + i == altered else v) for i, (k, v) in enumerate(records)]
        produce(a, topic, records, partition=0, timestamp_ms=written_at)
        produce(b, remote, copies, partition=0, timestamp_ms=written_at)
        progress = (ProgressKey("A->B", topic, 0).encode(), encode_progress(end))
        produce(b, progress_topic("A"), [progress])

    write(0, 20)
    config = write_mm2_config(
        tmp_path / "mm2.properties", {"A": cluster_a, "B": cluster_b}, {"A->B": {"topics": topic}}
    )
    port = free_port()
    env = {"STRAIT_AUDIT_INTERVAL_S": "1", "STRAIT_STATUS_INTERVAL_S": "1"}
    with ServiceProcess("audit", config, tmp_path, "--metrics-port", str(port), env=env) as audit:
        wait_until(lambda: metric(port, "strait_audit_verified_offset", topic=topic) == 20, 120, "audit watching")
        write(20, 30, altered=25)
        wait_until(lambda: metric(port, "strait_audit_verified_offset", topic=topic) == 30, 120, "the new range")
        assert metric(port, "strait_audit_altered_total", flow="A->B") == 1
        assert metric(port, "strait_audit_missing_total", flow="A->B") == 0
        assert metric(port, "strait_audit_records_verified_total", flow="A->B") == 9

        def degraded() -> ServiceStatus | None:
            found = [s for s in read_statuses(b).values() if s.service == "audit" and s.state == "degraded"]
            return next((s for s in found if topic in (s.last_error or "")), None)

        wait_until(lambda: degraded() is not None, 60, "a degraded audit status")
        status = degraded()
        assert status is not None
        assert f"{topic}-0 altered at source 25, target 25" in (status.last_error or "")
        assert audit.stop() == 0


def _kept(offsets: range) -> list[int]:
    return [i for i in offsets if not dropped_by_chain(i)]


def test_the_audit_of_a_flow_with_transforms_reports_no_loss_and_finds_records_the_target_lost(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    """Tombstones dropped, `secret` stripped, `origin` added (test_verify's chain): the audit verifies every copy
    against its source record as the chain makes it and counts the tombstones as dropped; a range deleted on the
    target is missing, named by its source offsets across the dropped ones."""
    topic, remote = f"audited-chain-{unique}", f"A.audited-chain-{unique}"
    a, b = cluster_a.client_properties(), cluster_b.client_properties()
    make_topic(a, topic)
    make_topic(b, remote)
    config = write_mm2_config(
        tmp_path / "mm2.properties", {"A": cluster_a, "B": cluster_b}, {"A->B": {"topics": topic, **CHAIN}}
    )

    def write(offsets: range) -> None:
        producer = confluent_producer(a, **{"enable.idempotence": True})
        for key, value, headers in transformed_source(0, offsets):
            producer.produce(topic, value, key, partition=0, headers=headers)
        assert producer.flush(30) == 0

    port = free_port()
    env = {"STRAIT_AUDIT_INTERVAL_S": "1", "STRAIT_STATUS_INTERVAL_S": "1"}
    write(range(50))
    mirrored = ServiceProcess("data_mirror", config, tmp_path, env={"STRAIT_COMMIT_INTERVAL_MS": "300"})
    audited = ServiceProcess("audit", config, tmp_path, "--metrics-port", str(port), "--flows", "A->B", env=env)
    with mirrored as mirror:
        consume_all(b, remote, expected=len(_kept(range(50))), timeout_s=120)
        wait_for_progress(b, "A", "A->B", topic, 0, 50)
        with audited as audit:
            wait_until(lambda: metric(port, "strait_audit_verified_offset", topic=topic) == 50, 120, "audit watching")
            write(range(50, 150))
            wait_until(lambda: metric(port, "strait_audit_verified_offset", topic=topic) == 150, 120, "second range")
            assert metric(port, "strait_audit_records_verified_total", flow="A->B") == len(_kept(range(50, 150)))
            assert metric(port, "strait_audit_records_dropped_total", flow="A->B") == 11
            assert metric(port, "strait_audit_missing_total", flow="A->B") == 0
            assert metric(port, "strait_audit_altered_total", flow="A->B") == 0
            assert metric(port, "strait_audit_unexpected_total", flow="A->B") == 0
            assert_nothing_lost(config, "A->B", topic, records=len(_kept(range(150))))

            # tombstones at 157, 166 and 175: 27 copies, deleted on the target before the audit reads them
            _lost_before_the_audit_read_it(audit, lambda: write(range(150, 180)), b, remote, len(_kept(range(180))))
            wait_until(lambda: metric(port, "strait_audit_missing_total", flow="A->B") == 27, 120, "the loss found")
            assert metric(port, "strait_audit_altered_total", flow="A->B") == 0
            assert metric(port, "strait_audit_records_dropped_total", flow="A->B") == 14
            status = _degraded(b)
            assert f"{topic}-0 missing 150-179 (27)" in (status.last_error or "")
            assert audit.stop() == 0
        assert mirror.stop() == 0
