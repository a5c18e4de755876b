"""Active/active under IdentityReplicationPolicy with provenance headers: both clusters hold one topic of the same
name, records are written to it on both sides while A->B and B->A run, and each record ends up exactly once on
each cluster; none is copied back to where it came from. `strait verify` proves each flow's copies record by record:
the records that came from the target are returned (not missing), the target's own records are not the flow's.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from shared.kafka.factories import confluent_producer
from shared.localkafka import KafkaCluster
from tests.support.kafka_io import consume_to_end, end_offsets_sum, make_topic
from tests.support.mm2_config import write_mm2_config
from tests.support.service_process import ServiceProcess
from tests.support.verify_oracle import assert_nothing_lost
from tests.support.waiting import wait_until

IDENTITY = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
PARTITIONS = 2
WRITE_S = 180  # "a few minutes" of writes on both sides, as the provenance promise is meant to hold
RATE = 20  # records per second on each side


def _write_steadily(cluster: KafkaCluster, topic: str, prefix: str, written: list[bytes]) -> None:
    producer = confluent_producer(cluster.client_properties(), **{"enable.idempotence": True, "linger.ms": 5})
    began = time.monotonic()
    i = 0
    while time.monotonic() - began < WRITE_S:
        value = f"{prefix}-{i}".encode()
        producer.produce(topic, value, partition=i % PARTITIONS)
        written.append(value)
        i += 1
        producer.poll(0)
        time.sleep(1 / RATE)
    assert producer.flush(60) == 0


def _holds(cluster: KafkaCluster, topic: str, total: int) -> Callable[[], bool]:
    return lambda: end_offsets_sum(cluster.client_properties(), topic, PARTITIONS) >= total


def test_an_active_active_pair_with_provenance_copies_each_record_once_each_way_and_never_back(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    topic = f"both-{unique}"
    for cluster in (cluster_a, cluster_b):
        make_topic(cluster.client_properties(), topic, PARTITIONS)
    flow = {"topics": topic, "emit.checkpoints.enabled": "false"}
    config = write_mm2_config(
        tmp_path / "mm2.properties",
        {"A": cluster_a, "B": cluster_b},
        {"A->B": flow, "B->A": flow},
        {"replication.policy.class": IDENTITY, "strait.provenance.enabled": "true"},
    )
    written: dict[str, list[bytes]] = {"A": [], "B": []}
    with ServiceProcess("data_mirror", config, tmp_path) as mirror:
        writers = [
            threading.Thread(target=_write_steadily, args=(cluster, topic, alias.lower(), written[alias]))
            for alias, cluster in (("A", cluster_a), ("B", cluster_b))
        ]
        for writer in writers:
            writer.start()
        for writer in writers:
            writer.join()
        total = len(written["A"]) + len(written["B"])
        for alias, cluster in (("A", cluster_a), ("B", cluster_b)):
            wait_until(_holds(cluster, topic, total), 180, f"{total} records on {alias}")
        time.sleep(5)  # a loop would keep copying: give it the time of many commit intervals
        assert mirror.stop() == 0
    expected = Counter(written["A"] + written["B"])
    for alias, other, cluster in (("A", b"B", cluster_a), ("B", b"A", cluster_b)):
        held = consume_to_end(cluster.client_properties(), topic)
        values = Counter(record.value for record in held)
        assert values == expected, f"{alias}: every record once ({sum(values.values())} of {total} held)"
        origins = {(dict(record.headers).get("strait.provenance") or b"")[:1] for record in held}
        assert origins == {b"", other}, "copies name the cluster they came from, originals carry no header"
    for name, source, target in (("A->B", "A", "B"), ("B->A", "B", "A")):
        totals = assert_nothing_lost(config, name, topic, records=len(written[source])).totals
        assert (totals.returned, totals.target_own) == (len(written[target]), len(written[target])), totals
