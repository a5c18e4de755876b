"""Network faults between Strait and the clusters, as users meet them between regions: a slow link, and
connections reset under load.

A fault proxy (Toxiproxy) stands between data-mirror and three clusters: every connection data-mirror makes goes
through it, while the test writes and checks directly. The clusters run Apache Kafka's own broker settings (topic
auto-creation on, 50-partition internal topics, the default socket and request limits), as many users' do. One
data-mirror runs a flow in each copy mode (batch forwarding, record by record, exactly-once), so each fault meets
all three at once; each test copies a backlog and records written during the fault, and ends with `strait
verify`'s record-by-record comparison over direct addresses for every flow: nothing lost, nothing altered, and no
duplicate when exactly-once. Black holes: test_faults_network_outage.py.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from shared.localkafka import KafkaCluster
from tests.support.network_faults import BACKLOG, DURING, TOTAL, copy_flows, proxied_trio, wait_copied, write
from tests.support.verify_oracle import assert_nothing_lost

pytestmark = pytest.mark.slow
__all__ = ["proxied_trio"]  # the clusters' fixture, for pytest
# A flow in each copy mode; every cluster is a source of one and a target of another.
MODES = {"NA->NB": "batches", "NB->NC": "records", "NC->NA": "exactly-once"}


def test_a_100_ms_round_trip_to_every_cluster_copies_everything_in_each_mode(
    proxied_trio: tuple[KafkaCluster, KafkaCluster, KafkaCluster], tmp_path: Path, unique: str
) -> None:
    clusters = {cluster.name: cluster for cluster in proxied_trio}
    for cluster in proxied_trio:
        cluster.network.latency(100)
    try:
        direct, topics, mirror = copy_flows(proxied_trio, MODES, tmp_path, unique, "latency")
        with mirror:
            for flow, topic in topics.items():
                write(clusters[flow.split("->")[0]], topic, BACKLOG, DURING)
            for flow, topic in topics.items():
                wait_copied(direct, topic, TOTAL, mirror, timeout_s=240, flow=flow)
            assert mirror.stop() == 0, mirror.tail()
    finally:
        for cluster in proxied_trio:
            cluster.network.heal()
    for flow, topic in topics.items():
        assert_nothing_lost(direct, flow, topic, records=TOTAL, exactly_once=MODES[flow] == "exactly-once")


def test_connections_reset_every_two_seconds_lose_nothing_in_each_mode(
    proxied_trio: tuple[KafkaCluster, KafkaCluster, KafkaCluster], tmp_path: Path, unique: str
) -> None:
    """A load balancer or NAT that resets every busy connection every two seconds, to every cluster, while the
    backlogs copy and more is written: the clients reconnect again and again, and every record arrives."""
    clusters = {cluster.name: cluster for cluster in proxied_trio}
    direct, topics, mirror = copy_flows(proxied_trio, MODES, tmp_path, unique, "resets")
    with mirror:
        mirror.wait_for_log("driver_ready", timeout_s=240)
        with contextlib.ExitStack() as resets:
            for cluster in proxied_trio:
                resets.enter_context(cluster.network.resets_every(2))
            for flow, topic in topics.items():
                write(clusters[flow.split("->")[0]], topic, BACKLOG, DURING)
            for flow, topic in topics.items():  # every record, copied under the resets
                wait_copied(direct, topic, TOTAL, mirror, timeout_s=300, flow=flow)
        assert mirror.stop() == 0, mirror.tail()
    for flow, topic in topics.items():
        assert_nothing_lost(direct, flow, topic, records=TOTAL, exactly_once=MODES[flow] == "exactly-once")
