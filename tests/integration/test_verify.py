"""`strait verify` against real brokers: a clean copy verifies with nothing lost; records deleted from the target,
records altered on the target and a range the source deleted before it was copied are each reported exactly; on a
flow with transforms, the same against what the flow makes of each source record."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from confluent_kafka import TopicPartition

from shared.control.topic_names import progress_topic
from shared.kafka.factories import confluent_admin, confluent_producer
from shared.localkafka import KafkaCluster
from shared.records.progress import ProgressKey, encode_progress
from tests.integration.test_cli import strait
from tests.support.chain_flow import CHAIN, Written, dropped_by_chain, transformed_source
from tests.support.kafka_io import consume_all, make_topic, produce
from tests.support.mm2_config import write_mm2_config
from tests.support.service_process import ServiceProcess

BASE_TS = int(time.time() * 1000)  # recent: a broker deletes records older than its retention (7 days)


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


def _write(props: dict[str, str], topic: str, records: list[Written], partition: int = 0, first: int = 0) -> None:
    """`records` into `partition`, record i with timestamp BASE_TS + first + i (a copy keeps its source's)."""
    producer = confluent_producer(props, **{"enable.idempotence": True})
    for i, (key, value, headers) in enumerate(records):
        producer.produce(topic, value, key, partition=partition, headers=headers, timestamp=BASE_TS + first + i)
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


def test_a_flow_with_a_filter_and_header_transforms_verifies_clean_and_a_loss_or_an_alteration_is_found_by_offset(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    """data-mirror copies two partitions through the chain: verify compares each copy with its source record as the
    chain makes it, counts the tombstones as dropped (not missing) and exits 0. Then the first 25 copies of partition
    1 are deleted on the target (missing: the source offsets they held, across the dropped ones) and a later range of
    partition 0 is written to the target by hand, as data-mirror would, with one copy altered (found by its source
    and target offsets)."""
    topic, remote = f"verify-chain-{unique}", f"A.verify-chain-{unique}"
    a, b = cluster_a.client_properties(), cluster_b.client_properties()
    make_topic(a, topic, 2)
    make_topic(b, remote, 2)
    for partition in range(2):
        _write(a, topic, transformed_source(partition, range(200)), partition)
    kept = [i for i in range(200) if not dropped_by_chain(i)]
    config = write_mm2_config(
        tmp_path / "mm2.properties", {"A": cluster_a, "B": cluster_b}, {"A->B": {"topics": topic, **CHAIN}}
    )
    with ServiceProcess("data_mirror", config, tmp_path) as mirror:
        consume_all(b, remote, expected=2 * len(kept), timeout_s=120)
        assert mirror.stop() == 0

    code, flow = verify_json(config, topic)
    totals = flow["totals"]
    assert code == 0, totals
    assert (totals["verified"], totals["dropped"], totals["lost"], totals["unexpected"]) == (356, 44, 0, 0), totals
    assert (totals["not_yet_copied"], totals["unverified"]) == (0, 0), totals
    assert [finding["dropped"] for finding in flow["partitions"]] == [22, 22]
    table = strait("verify", "--config", str(config), "--topics", topic)
    assert table.returncode == 0, table.stdout
    assert "dropped by the flow's transforms 44" in table.stdout, table.stdout

    admin = confluent_admin(b)
    admin.delete_records([TopicPartition(remote, 1, 25)])[TopicPartition(remote, 1, 25)].result(30)
    # Partition 0 goes on by hand: 200..205 on the source (a tombstone at 202, `secret` at 205), their copies as the
    # chain makes them (178.. on the target) but for 204's value, and data-mirror's progress past them.
    later = transformed_source(0, range(200, 206))
    _write(a, topic, later, first=200)
    copies: list[Written] = [
        (key, b"altered" if key == b"k0-204" else value, [("h", b"v"), ("origin", b"eu-west")])
        for key, value, _headers in later
        if value is not None
    ]
    producer = confluent_producer(b, **{"enable.idempotence": True})
    for (key, value, headers), source_offset in zip(copies, [200, 201, 203, 204, 205], strict=True):
        producer.produce(remote, value, key, partition=0, headers=headers, timestamp=BASE_TS + source_offset)
    progress = (ProgressKey("A->B", topic, 0).encode(), encode_progress(206))
    producer.produce(progress_topic("A"), progress[1], progress[0])
    assert producer.flush(30) == 0

    code, flow = verify_json(config, topic)
    partitions = by_partition(flow)
    assert code == 3
    assert partitions[1]["missing"] == [{"first": 0, "last": 27, "records": 25}], "kept 0..27: 25 records"
    assert (partitions[1]["verified"], partitions[1]["lost"], partitions[1]["dropped"]) == (153, 25, 22)
    assert partitions[0]["altered"] == [{"source_offset": 204, "target_offset": 181}]
    assert (partitions[0]["verified"], partitions[0]["lost"], partitions[0]["dropped"]) == (182, 1, 23)
    assert flow["totals"]["unexpected"] == 0
