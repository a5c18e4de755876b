"""`strait verify` against real brokers: a clean copy verifies with nothing lost; records deleted from the target,
records altered on the target and a range the source deleted before it was copied are each reported exactly."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from confluent_kafka import TopicPartition

from shared.kafka.factories import confluent_admin, confluent_producer
from shared.localkafka import KafkaCluster
from tests.integration.test_cli import strait
from tests.support.kafka_io import consume_all, make_topic, produce
from tests.support.mm2_config import write_mm2_config
from tests.support.service_process import ServiceProcess

BASE_TS = int(time.time() * 1000)  # recent: a broker deletes records older than its retention (7 days)
Written = tuple[bytes, bytes, list[tuple[str, str | bytes]]]  # key, value, headers


def verify_json(config: Path, topics: str) -> tuple[int, dict[str, Any]]:
    run = strait("verify", "--config", str(config), "--flows", "A->B", "--topics", topics, "--json")
    assert run.returncode in (0, 3), run.stderr
    return run.returncode, json.loads(run.stdout)["flows"][0]


def by_partition(flow: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {finding["partition"]: finding for finding in flow["partitions"]}


def test_a_clean_copy_verifies_and_records_deleted_from_the_target_are_named_missing(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    topic = f"verify-{unique}"
    a, b = cluster_a.client_properties(), cluster_b.client_properties()
    make_topic(a, topic, 3)
    make_topic(b, f"A.{topic}", 3)  # topic-sync's job; data-mirror copies into remote topics that exist
    for partition in range(3):
        records = [(f"k{partition}-{i}".encode(), f"v{partition}-{i}".encode()) for i in range(200)]
        produce(a, topic, records, partition=partition, headers=[("origin", f"p{partition}".encode())])
    config = write_mm2_config(
        tmp_path / "mm2.properties", {"A": cluster_a, "B": cluster_b}, {"A->B": {"topics": topic}}
    )
    with ServiceProcess("data_mirror", config, tmp_path) as mirror:
        consume_all(b, f"A.{topic}", expected=600, timeout_s=120)
        assert mirror.stop() == 0

    code, flow = verify_json(config, topic)
    totals = flow["totals"]
    assert code == 0, totals
    assert (totals["verified"], totals["lost"], totals["unexpected"], totals["not_yet_copied"]) == (600, 0, 0, 0)
    assert totals["records_read"] == 1200

    admin = confluent_admin(b)
    admin.delete_records([TopicPartition(f"A.{topic}", 1, 25)])[TopicPartition(f"A.{topic}", 1, 25)].result(30)
    code, flow = verify_json(config, topic)
    partitions = by_partition(flow)
    assert code == 3
    assert partitions[1]["missing"] == [{"first": 0, "last": 24, "records": 25}]
    assert (partitions[1]["verified"], partitions[1]["lost"]) == (175, 25)
    assert [partitions[p]["lost"] for p in (0, 2)] == [0, 0]
    assert flow["totals"]["missing"] == 25

    table = strait("verify", "--config", str(config), "--topics", topic)
    assert table.returncode == 3
    assert "LOST" in table.stdout
    assert "missing at 0-24" in table.stdout, table.stdout


def _write(props: dict[str, str], topic: str, records: list[Written]) -> None:
    producer = confluent_producer(props, **{"enable.idempotence": True})
    for i, (key, value, headers) in enumerate(records):
        producer.produce(topic, value, key, partition=0, headers=headers, timestamp=BASE_TS + i)
    assert producer.flush(30) == 0


def test_records_altered_on_the_target_are_named_by_source_and_target_offset(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    """A replica written by hand (no mirror): equal to the source but for a value at 17 and a header at 30."""
    topic = f"verify-altered-{unique}"
    a, b = cluster_a.client_properties(), cluster_b.client_properties()
    make_topic(a, topic)
    make_topic(b, f"A.{topic}")
    records: list[Written] = [(f"k{i}".encode(), f"v{i}".encode(), [("h", b"1")]) for i in range(40)]
    _write(a, topic, records)
    replica = list(records)
    replica[17] = (b"k17", b"changed", [("h", b"1")])
    replica[30] = (b"k30", b"v30", [("h", b"2")])
    _write(b, f"A.{topic}", replica)
    config = write_mm2_config(
        tmp_path / "mm2.properties", {"A": cluster_a, "B": cluster_b}, {"A->B": {"topics": topic}}
    )

    code, flow = verify_json(config, topic)
    finding = by_partition(flow)[0]
    assert code == 3
    assert finding["altered"] == [
        {"source_offset": 17, "target_offset": 17},
        {"source_offset": 30, "target_offset": 30},
    ]
    assert (finding["verified"], finding["altered_records"], finding["missing_records"]) == (38, 2, 0)


def test_a_bad_topics_regex_and_a_bad_time_are_usage_errors(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, tmp_path: Path
) -> None:
    config = write_mm2_config(tmp_path / "mm2.properties", {"A": cluster_a, "B": cluster_b}, {"A->B": {}})
    bad_regex = strait("verify", "--config", str(config), "--topics", "(")
    assert bad_regex.returncode == 2
    assert "--topics is not a regular expression" in bad_regex.stderr
    bad_time = strait("verify", "--config", str(config), "--since", "yesterday")
    assert bad_time.returncode == 2
    assert "--since 'yesterday'" in bad_time.stderr
