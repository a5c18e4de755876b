"""Exactly-once: a transaction left open by an earlier run in any slot is aborted when data-mirror starts, however
many slots that run had, so read_committed readers of the target are never held back by it.

The earlier run is played by a producer of slot 11 (a run with twelve slots, killed mid-transaction) that wrote
into the remote topic without committing; the new run has two slots.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import KafkaException

from shared.control.topic_names import mirror_transactional_id
from shared.kafka.factories import confluent_producer
from shared.localkafka import KafkaCluster
from tests.support.kafka_io import consume_all, make_topic, produce
from tests.support.mm2_config import write_mm2_config
from tests.support.service_process import ServiceProcess


def test_a_transaction_left_open_in_slot_11_is_aborted_by_a_two_slot_run(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    topic = f"fenced-{unique}"
    flow = f"S{unique}->T{unique}"  # aliases of its own: no other test's flow shares these transactional ids
    remote = f"S{unique}.{topic}"
    make_topic(cluster_a.client_properties(), topic)
    make_topic(cluster_b.client_properties(), remote)
    left_over = confluent_producer(
        cluster_b.client_properties(),
        **{"transactional.id": mirror_transactional_id(flow, 11), "transaction.timeout.ms": 900_000},
    )
    left_over.init_transactions(60)
    left_over.begin_transaction()
    left_over.produce(remote, b"never committed", partition=0)
    assert left_over.flush(30) == 0
    source = [(f"k{i}".encode(), f"v{i}".encode()) for i in range(100)]
    produce(cluster_a.client_properties(), topic, source)
    config = write_mm2_config(
        tmp_path / "mm2.properties",
        {f"S{unique}": cluster_a, f"T{unique}": cluster_b},
        {flow: {"topics": topic, "exactly.once.support": "enabled", "tasks.max": "2"}},
    )
    with ServiceProcess("data_mirror", config, tmp_path, env={"STRAIT_COMMIT_INTERVAL_MS": "300"}) as mirror:
        target = consume_all(
            cluster_b.client_properties(), remote, expected=len(source), timeout_s=90, isolation_level="read_committed"
        )
        assert mirror.stop() == 0
    assert [(r.key, r.value) for r in target] == source
    with pytest.raises(KafkaException):  # fenced: its transaction was aborted for it
        left_over.commit_transaction(30)
