"""Network faults between Strait and the clusters, as users meet them between regions: a slow link, and
connections reset under load.

A fault proxy (Toxiproxy) stands between data-mirror and both clusters: every connection data-mirror makes goes
through it, while the test writes and checks directly. Both clusters run Apache Kafka's own broker settings (topic
auto-creation on, 50-partition internal topics, the default socket and request limits), as many users' do. Each
test copies a backlog and records written during the fault, in each copy mode (batch forwarding, record by
record, exactly-once), and ends with `strait verify`'s record-by-record comparison over direct addresses: nothing
lost, nothing altered, and no duplicate when exactly-once. Black holes: test_faults_network_outage.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shared.localkafka import KafkaCluster
from tests.support.network_faults import BACKLOG, DURING, MODES, TOTAL, copy_through, proxied, wait_copied, write
from tests.support.verify_oracle import assert_nothing_lost

pytestmark = pytest.mark.slow
__all__ = ["proxied"]  # the clusters' fixture, for pytest


@pytest.mark.parametrize("mode", list(MODES))
def test_a_100_ms_round_trip_to_both_clusters_copies_everything(
    proxied: tuple[KafkaCluster, KafkaCluster], mode: str, tmp_path: Path, unique: str
) -> None:
    source, target = proxied
    source.network.latency(100)
    target.network.latency(100)
    try:
        direct, topic, mirror = copy_through(source, target, mode, tmp_path, unique, "latency")
        with mirror:
            write(source, topic, BACKLOG, DURING)
            wait_copied(direct, topic, TOTAL, mirror, timeout_s=240)
            assert mirror.stop() == 0, mirror.tail()
    finally:
        source.network.heal()
        target.network.heal()
    assert_nothing_lost(direct, "NA->NB", topic, records=TOTAL, exactly_once=mode == "exactly-once")


@pytest.mark.parametrize("mode", list(MODES))
def test_connections_reset_every_two_seconds_lose_nothing(
    proxied: tuple[KafkaCluster, KafkaCluster], mode: str, tmp_path: Path, unique: str
) -> None:
    """A load balancer or NAT that resets every busy connection every two seconds, on both sides, while the
    backlog copies and more is written: the clients reconnect again and again, and every record arrives."""
    source, target = proxied
    direct, topic, mirror = copy_through(source, target, mode, tmp_path, unique, "resets")
    with mirror:
        mirror.wait_for_log("driver_ready", timeout_s=240)
        with source.network.resets_every(2), target.network.resets_every(2):
            write(source, topic, BACKLOG, DURING)
            wait_copied(direct, topic, TOTAL, mirror, timeout_s=300)  # every record, copied under the resets
        assert mirror.stop() == 0, mirror.tail()
    assert_nothing_lost(direct, "NA->NB", topic, records=TOTAL, exactly_once=mode == "exactly-once")
