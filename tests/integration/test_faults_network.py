"""Network faults between Strait and the clusters, as users meet them between regions.

A fault proxy (Toxiproxy) stands between data-mirror and both clusters: every connection data-mirror makes goes
through it, while the test writes and checks directly. Both clusters run Apache Kafka's own broker settings (topic
auto-creation on, 50-partition internal topics, the default socket and request limits), as many users' do. Each
test copies a backlog and records written during the fault, in each copy mode (batch forwarding, record by
record, exactly-once), and ends with `strait verify`'s record-by-record comparison over direct addresses: nothing
lost, nothing altered, and no duplicate when exactly-once.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from shared.localkafka import KafkaCluster
from shared.localkafka.cluster import running
from shared.localkafka.fault_proxy import FaultProxy
from tests.support.kafka_io import make_topic, produce
from tests.support.mm2_config import write_mm2_config
from tests.support.service_process import ServiceProcess
from tests.support.verify_oracle import assert_nothing_lost, verify

pytestmark = pytest.mark.slow

PARTITIONS = 4
BACKLOG = 4_000  # per partition, written before data-mirror starts
DURING = 500  # per partition, written while the fault is on
MODES = {
    "batches": {"strait.copy.batches": "auto"},
    "records": {"strait.copy.batches": "off"},
    "exactly-once": {"exactly.once.support": "enabled"},
}


@pytest.fixture(scope="module")
def proxied(
    kafka_runtime: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[KafkaCluster, KafkaCluster]]:
    """Source NA and target NB on Kafka's default broker settings, reachable through the fault proxy and directly."""
    proxy = FaultProxy(tmp_path_factory.mktemp("toxiproxy")).start()
    try:
        pair = (KafkaCluster(name, proxy=proxy, broker_defaults=True) for name in ("NA", "NB"))
        with running(*pair) as (source, target):
            yield source, target
    finally:
        proxy.stop()


def _write(cluster: KafkaCluster, topic: str, first: int, count: int) -> None:
    for partition in range(PARTITIONS):
        records = [
            (f"k{i}".encode(), f"{partition}:{i}".encode().ljust(200, b".")) for i in range(first, first + count)
        ]
        produce(cluster.client_properties(), topic, records, partition=partition, headers=[("h", b"v")])


def _copy_through(
    source: KafkaCluster, target: KafkaCluster, mode: str, tmp_path: Path, unique: str, fault: str
) -> tuple[Path, str, ServiceProcess]:
    """Topics on both sides, the backlog written, data-mirror started behind the proxy; returns the direct config
    (for verifying), the topic and data-mirror behind the proxy (started by `with`)."""
    topic = f"net-{fault}-{mode}-{unique}"
    make_topic(source.client_properties(), topic, partitions=PARTITIONS)
    make_topic(target.client_properties(), f"NA.{topic}", partitions=PARTITIONS)  # topic-sync's job
    _write(source, topic, 0, BACKLOG)
    flow = {"topics": topic, **MODES[mode]}
    behind = write_mm2_config(
        tmp_path / "mm2.properties", {"NA": source.via_proxy(), "NB": target.via_proxy()}, {"NA->NB": flow}
    )
    direct = write_mm2_config(tmp_path / "direct.properties", {"NA": source, "NB": target}, {"NA->NB": flow})
    mirror = ServiceProcess("data_mirror", behind, tmp_path, env={"STRAIT_COMMIT_INTERVAL_MS": "500"})
    return direct, topic, mirror


def _wait_copied(direct: Path, topic: str, records: int, mirror: ServiceProcess, timeout_s: float) -> None:
    """Until the verifier finds every source record on the target (what a user's `strait verify` would say)."""
    deadline = time.monotonic() + timeout_s
    while (verified := verify(direct, "NA->NB", topic).totals.verified) < records:
        assert mirror.popen is not None
        assert mirror.popen.poll() is None, f"data-mirror exited:\n{mirror.tail()}"
        assert time.monotonic() < deadline, f"{verified} of {records} copied within {timeout_s:.0f}s:\n{mirror.tail()}"
        time.sleep(1)


@pytest.mark.parametrize("mode", list(MODES))
def test_a_100_ms_round_trip_to_both_clusters_copies_everything(
    proxied: tuple[KafkaCluster, KafkaCluster], mode: str, tmp_path: Path, unique: str
) -> None:
    source, target = proxied
    source.network.latency(100)
    target.network.latency(100)
    try:
        direct, topic, mirror = _copy_through(source, target, mode, tmp_path, unique, "latency")
        with mirror:
            _write(source, topic, BACKLOG, DURING)
            total = PARTITIONS * (BACKLOG + DURING)
            _wait_copied(direct, topic, total, mirror, timeout_s=240)
            assert mirror.stop() == 0, mirror.tail()
    finally:
        source.network.heal()
        target.network.heal()
    assert_nothing_lost(direct, "NA->NB", topic, records=total, exactly_once=mode == "exactly-once")


@pytest.mark.parametrize("mode", list(MODES))
def test_connections_reset_every_two_seconds_lose_nothing(
    proxied: tuple[KafkaCluster, KafkaCluster], mode: str, tmp_path: Path, unique: str
) -> None:
    """A load balancer or NAT that resets every busy connection every two seconds, on both sides, while the
    backlog copies and more is written: the clients reconnect again and again, and every record arrives."""
    source, target = proxied
    direct, topic, mirror = _copy_through(source, target, mode, tmp_path, unique, "resets")
    total = PARTITIONS * (BACKLOG + DURING)
    with mirror:
        mirror.wait_for_log("driver_ready", timeout_s=240)
        with source.network.resets_every(2), target.network.resets_every(2):
            _write(source, topic, BACKLOG, DURING)
            _wait_copied(direct, topic, total, mirror, timeout_s=300)  # every record, copied under the resets
        assert mirror.stop() == 0, mirror.tail()
    assert_nothing_lost(direct, "NA->NB", topic, records=total, exactly_once=mode == "exactly-once")


@pytest.mark.parametrize(("side", "mode"), [("source", "batches"), ("target", "batches"), ("target", "exactly-once")])
def test_a_link_that_answers_nothing_for_45_seconds_then_heals_loses_nothing(
    proxied: tuple[KafkaCluster, KafkaCluster], side: str, mode: str, tmp_path: Path, unique: str
) -> None:
    """A black hole (requests go out, nothing comes back, nothing closes) between data-mirror and one cluster
    for 45 s while records keep being written: once the link heals, copying goes on and every record arrives."""
    source, target = proxied
    dark = source if side == "source" else target
    direct, topic, mirror = _copy_through(source, target, mode, tmp_path, unique, f"dark-{side}")
    total = PARTITIONS * (BACKLOG + DURING)
    with mirror:
        _wait_copied(direct, topic, PARTITIONS * BACKLOG, mirror, timeout_s=240)
        dark.network.black_hole()
        try:
            _write(source, topic, BACKLOG, DURING)
            time.sleep(45)
        finally:
            dark.network.heal()
        _wait_copied(direct, topic, total, mirror, timeout_s=300)
        assert mirror.stop() == 0, mirror.tail()
    assert_nothing_lost(direct, "NA->NB", topic, records=total, exactly_once=mode == "exactly-once")
