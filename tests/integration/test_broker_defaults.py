"""The core copy on clusters that run Apache Kafka's own broker settings, as many users' do: topic auto-creation on,
one partition per new topic, 50-partition offsets and transaction topics, the default request and socket limits.

Every other copy test runs on the harness's tuned brokers; here topic-sync makes the remote topic (a client that
asked first would have had the broker make it with one partition) and data-mirror copies records with null keys
and values, repeated and empty headers and old timestamps, forwarding batches one way and exactly-once the other
(record by record runs on these clusters in the network-fault tests). The test ends with a record-by-record
comparison and `strait verify` for each flow.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from shared.kafka.factories import confluent_admin
from shared.localkafka import KafkaCluster
from shared.localkafka.cluster import running
from tests.support.fidelity import assert_identical, fill_varied
from tests.support.kafka_io import Rec, consume_all, make_topic
from tests.support.mm2_config import write_mm2_config
from tests.support.network_faults import MODES as COPY_MODES
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


# A flow each way under one topic-sync and one data-mirror (records: the network-fault tests run it on these settings).
MODES = {"DA->DB": "batches", "DB->DA": "exactly-once"}


def test_topic_sync_and_data_mirror_copy_every_field_on_default_brokers(
    default_pair: tuple[KafkaCluster, KafkaCluster], tmp_path: Path, unique: str
) -> None:
    clusters = {cluster.name: cluster for cluster in default_pair}
    topics = {flow: f"defaults-{mode}-{unique}" for flow, mode in MODES.items()}
    for flow, topic in topics.items():
        source = clusters[flow.split("->")[0]]
        make_topic(source.client_properties(), topic, partitions=PARTITIONS)
        fill_varied(source, topic, PARTITIONS, PER_PARTITION, start_ts=int(time.time() * 1000) - 3_600_000)
    flows = {flow: {"topics": topics[flow], **COPY_MODES[mode]} for flow, mode in MODES.items()}
    config = write_mm2_config(tmp_path / "mm2.properties", clusters, flows)
    records = PARTITIONS * PER_PARTITION
    admins = {alias: confluent_admin(cluster.client_properties()) for alias, cluster in clusters.items()}

    def remote_partitions(flow: str) -> int:
        source_alias, target_alias = flow.split("->")
        remote = f"{source_alias}.{topics[flow]}"
        listed = admins[target_alias].list_topics(remote, timeout=10)
        found = listed.topics.get(remote)
        return 0 if found is None or found.error is not None else len(found.partitions)

    def made(flow: str) -> bool:
        return remote_partitions(flow) > 0

    copied: dict[str, list[Rec]] = {}
    with (
        ServiceProcess("topic_sync", config, tmp_path) as topic_sync,
        ServiceProcess("data_mirror", config, tmp_path, env={"STRAIT_COMMIT_INTERVAL_MS": "500"}) as mirror,
    ):
        for flow, topic in topics.items():
            source_alias, target_alias = flow.split("->")
            wait_until(functools.partial(made, flow), 180, f"{source_alias}.{topic} made on {target_alias}")
            remote_props = clusters[target_alias].client_properties()
            copied[flow] = consume_all(remote_props, f"{source_alias}.{topic}", expected=records, timeout_s=240)
        assert mirror.stop() == 0, mirror.tail()
        assert topic_sync.stop() == 0, topic_sync.tail()
    for flow, topic in topics.items():
        assert remote_partitions(flow) == PARTITIONS, f"{flow}: the source's partitions, not the broker's 1"
        source_props = clusters[flow.split("->")[0]].client_properties()
        assert_identical(consume_all(source_props, topic, expected=records), copied[flow])
        assert_nothing_lost(config, flow, topic, records=records, exactly_once=MODES[flow] == "exactly-once")
