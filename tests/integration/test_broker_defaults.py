"""The core copy on clusters that run Apache Kafka's own broker settings, as many users' do: topic auto-creation on,
one partition per new topic, 50-partition offsets and transaction topics, the default request and socket limits.

Every other copy test runs on the harness's tuned brokers; here topic-sync makes the remote topic (a client that
asked first would have had the broker make it with one partition) and data-mirror copies records with null keys
and values, repeated and empty headers and old timestamps, forwarding batches and exactly-once (record by
record runs on these clusters in the network-fault tests). Each test ends with a
record-by-record comparison and `strait verify`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from shared.kafka.factories import confluent_admin
from shared.localkafka import KafkaCluster
from shared.localkafka.cluster import running
from tests.support.fidelity import assert_identical, fill_varied
from tests.support.kafka_io import consume_all, make_topic
from tests.support.mm2_config import write_mm2_config
from tests.support.network_faults import MODES
from tests.support.service_process import ServiceProcess
from tests.support.verify_oracle import assert_nothing_lost
from tests.support.waiting import wait_until

pytestmark = pytest.mark.slow
PARTITIONS = 3
PER_PARTITION = 4_000


@pytest.fixture(scope="module")
def default_pair(kafka_runtime: str) -> Iterator[tuple[KafkaCluster, KafkaCluster]]:
    """Source DA and target DB on Apache Kafka's default broker settings."""
    pair = (KafkaCluster(name, broker_defaults=True) for name in ("DA", "DB"))
    with running(*pair) as (source, target):
        yield source, target


@pytest.mark.parametrize("mode", ["batches", "exactly-once"])  # records: the network-fault tests run it here
def test_topic_sync_and_data_mirror_copy_every_field_on_default_brokers(
    default_pair: tuple[KafkaCluster, KafkaCluster], mode: str, tmp_path: Path, unique: str
) -> None:
    source, target = default_pair
    topic = f"defaults-{mode}-{unique}"
    remote = f"DA.{topic}"
    make_topic(source.client_properties(), topic, partitions=PARTITIONS)
    fill_varied(source, topic, PARTITIONS, PER_PARTITION, start_ts=int(time.time() * 1000) - 3_600_000)
    flow = {"topics": topic, **MODES[mode]}
    config = write_mm2_config(tmp_path / "mm2.properties", {"DA": source, "DB": target}, {"DA->DB": flow})
    records = PARTITIONS * PER_PARTITION
    admin = confluent_admin(target.client_properties())

    def remote_partitions() -> int:
        listed = admin.list_topics(remote, timeout=10).topics.get(remote)
        return 0 if listed is None or listed.error is not None else len(listed.partitions)

    with (
        ServiceProcess("topic_sync", config, tmp_path) as topic_sync,
        ServiceProcess("data_mirror", config, tmp_path, env={"STRAIT_COMMIT_INTERVAL_MS": "500"}) as mirror,
    ):
        wait_until(lambda: remote_partitions() > 0, 180, f"{remote} made on the target")
        copied = consume_all(target.client_properties(), remote, expected=records, timeout_s=240)
        assert mirror.stop() == 0, mirror.tail()
        assert topic_sync.stop() == 0, topic_sync.tail()
    assert remote_partitions() == PARTITIONS, "the remote topic has the source's partitions, not the broker's 1"
    assert_identical(consume_all(source.client_properties(), topic, expected=records), copied)
    assert_nothing_lost(config, "DA->DB", topic, records=records, exactly_once=mode == "exactly-once")
