"""Records the source deletes before they were copied are skipped as auto.offset.reset says, and every one of them
is counted and named (metric, progress report, log line with the range), in both copy paths (a flow each way under
one data-mirror), and `strait verify` reports the same range as expired before it was copied; the audit, watching
from offset 10, counts the 40 as expired before it could read them and verifies the 50 copied after.

The race is made exact: the remote topic refuses record 10 (too large), so the partition waits there; meanwhile
the source's records before offset 50 are deleted (DeleteRecords, as retention would). When the refused record
is tried again it is gone: copying goes on at 50, and 10..49 are reported expired.
"""

from __future__ import annotations

import functools
from pathlib import Path

from confluent_kafka import TopicPartition

from shared.kafka.factories import confluent_admin
from shared.localkafka import KafkaCluster
from shared.localkafka.ports import free_port
from shared.verify.findings import OffsetRange
from tests.support.kafka_io import consume_all, consume_to_end, make_topic, produce
from tests.support.metrics_page import metric
from tests.support.mm2_config import write_mm2_config
from tests.support.progress import wait_for_progress
from tests.support.service_process import ServiceProcess
from tests.support.verify_oracle import verify
from tests.support.waiting import wait_until

LIMIT = 20_000


# One data-mirror (and one audit) over a flow each way, one per copy path.
COPY_BATCHES = {"A->B": "auto", "B->A": "off"}


def test_records_deleted_on_the_source_while_the_partition_waited_are_counted_as_expired(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    clusters = {"A": cluster_a, "B": cluster_b}
    topics = {flow: f"expired-{batches}-{unique}" for flow, batches in COPY_BATCHES.items()}
    values = [f"v{i}".encode() if i != 10 else b"x" * (LIMIT + 10_000) for i in range(100)]
    for flow, topic in topics.items():
        source, target = (clusters[alias].client_properties() for alias in flow.split("->"))
        make_topic(source, topic)
        make_topic(target, f"{flow[0]}.{topic}", 1, **{"max.message.bytes": str(LIMIT)})
        produce(source, topic, [(None, value) for value in values], partition=0)
    flows = {flow: {"topics": topic, "strait.copy.batches": COPY_BATCHES[flow]} for flow, topic in topics.items()}
    config = write_mm2_config(tmp_path / "mm2.properties", clusters, flows)
    env = {"STRAIT_COMMIT_INTERVAL_MS": "300", "STRAIT_BLOCKED_RETRY_S": "3"}
    port = free_port()
    audited = ServiceProcess(
        "audit", config, tmp_path, "--metrics-port", str(port), env={"STRAIT_AUDIT_INTERVAL_S": "1"}
    )
    with ServiceProcess("data_mirror", config, tmp_path, env=env) as mirror:
        for flow, topic in topics.items():
            mirror.wait_for_log("record_refused_partition_stopped", 120, topic=topic, offset=10)
            # The audit starts once the mirror has reported 0..9 copied, so it watches from 10 (the mirror's
            # position when the audit first sees the partition; an earlier one would make it verify part of 0..9).
            wait_for_progress(clusters[flow[-1]].client_properties(), flow[0], flow, topic, 0, 10)
        with audited as audit:
            for topic in topics.values():
                at_10 = functools.partial(_audited_to, port, topic, 10)
                wait_until(at_10, 120, f"the audit of {topic} at 10")
            for flow, topic in topics.items():
                admin = confluent_admin(clusters[flow[0]].client_properties())
                admin.delete_records([TopicPartition(topic, 0, 50)])[TopicPartition(topic, 0, 50)].result(30)
            for flow, topic in topics.items():
                expired = mirror.wait_for_log("source_records_expired", 120, topic=topic)
                assert (expired["records"], expired["first_offset"], expired["resumed_at"]) == (40, 10, 50), flow
                consume_all(clusters[flow[-1]].client_properties(), f"{flow[0]}.{topic}", expected=60, timeout_s=60)
                mirror.wait_for_log("partition_resumed", 30, topic=topic)
            for flow, topic in topics.items():
                # The audit, watching since offset 10, finds 10..49 gone before it could read them and 50..99 copied.
                wait_until(functools.partial(_audited_to, port, topic, 100), 120, f"the audit of {topic} at 100")
                assert metric(port, "strait_audit_skipped_records_total", flow=flow, reason="expired") == 40
                assert metric(port, "strait_audit_records_verified_total", flow=flow) == 50
                assert metric(port, "strait_audit_missing_total", flow=flow) == 0
                assert metric(port, "strait_audit_altered_total", flow=flow) == 0
            assert audit.stop() == 0
        assert mirror.stop() == 0
    for flow, topic in topics.items():
        target = clusters[flow[-1]].client_properties()
        copied = [record.value for record in consume_to_end(target, f"{flow[0]}.{topic}")]
        assert copied == values[:10] + values[50:], f"{flow}: 0..9 before the wait, then everything the source held"
        # The verifier tells the same story from the clusters alone: 10..49 left the source before they were copied,
        # the target's 0..9 have no source left to compare with, and 50..99 are on the target unchanged.
        found = verify(config, flow, topic).findings[0]
        assert found.expired == [OffsetRange(10, 49, 40)], flow
        assert (found.verified, found.source_gone, found.missing_records, found.altered_records) == (50, 10, 0, 0)
        assert (found.unexpected, found.not_yet_copied) == (0, 0), flow


def _audited_to(port: int, topic: str, offset: int) -> bool:
    return metric(port, "strait_audit_verified_offset", topic=topic) == offset
