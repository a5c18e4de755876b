"""Copying through the fault proxy: clusters on Kafka's default broker settings behind it, flows between them in
the three copy modes, one data-mirror reaching every cluster through the proxy, and the wait for `strait verify` to
find every record (the network-fault tests' common part)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest

from shared.config import load_mm2_config
from shared.localkafka import KafkaCluster
from shared.localkafka.cluster import running
from shared.localkafka.fault_proxy import FaultProxy
from tests.support.kafka_io import end_offsets_sum, make_topic, produce
from tests.support.mm2_config import write_mm2_config
from tests.support.service_process import ServiceProcess
from tests.support.verify_oracle import verify

PARTITIONS = 4
BACKLOG = 4_000  # per partition, written before data-mirror starts
DURING = 500  # per partition, written while the fault is on
TOTAL = PARTITIONS * (BACKLOG + DURING)
MODES = {
    "batches": {"strait.copy.batches": "auto"},
    "records": {"strait.copy.batches": "off"},
    "exactly-once": {"exactly.once.support": "enabled"},
}


@contextlib.contextmanager
def proxied_clusters(names: Sequence[str], workdir: Path) -> Iterator[tuple[KafkaCluster, ...]]:
    """One-node clusters named `names` on Kafka's default broker settings, reachable through one fault proxy and
    directly."""
    proxy = FaultProxy(workdir).start()
    try:
        with running(*(KafkaCluster(name, proxy=proxy, broker_defaults=True) for name in names)) as clusters:
            yield tuple(clusters)
    finally:
        proxy.stop()


@pytest.fixture(scope="module")
def proxied_trio(
    kafka_runtime: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[KafkaCluster, KafkaCluster, KafkaCluster]]:
    """NA, NB and NC behind the fault proxy: room for a flow in each copy mode under one data-mirror (one flow
    per pair of clusters), so one fault is met by all three modes at once."""
    with proxied_clusters(("NA", "NB", "NC"), tmp_path_factory.mktemp("toxiproxy")) as (na, nb, nc):
        yield na, nb, nc


@pytest.fixture(scope="module")
def proxied_pairs(
    kafka_runtime: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[KafkaCluster, KafkaCluster, KafkaCluster, KafkaCluster]]:
    """Two pairs behind the fault proxy, NA with NB and NC with ND: one link of each pair can fail at once under one
    data-mirror, each a different fault for the flows between its pair."""
    with proxied_clusters(("NA", "NB", "NC", "ND"), tmp_path_factory.mktemp("toxiproxy")) as clusters:
        na, nb, nc, nd = clusters
        yield na, nb, nc, nd


def write(cluster: KafkaCluster, topic: str, first: int, count: int) -> None:
    """Records `first` .. `first + count - 1` to every partition of `topic` (keyed, 200 B, one header)."""
    for partition in range(PARTITIONS):
        records = [
            (f"k{i}".encode(), f"{partition}:{i}".encode().ljust(200, b".")) for i in range(first, first + count)
        ]
        produce(cluster.client_properties(), topic, records, partition=partition, headers=[("h", b"v")])


def copy_flows(
    clusters: Sequence[KafkaCluster],
    modes: Mapping[str, str],
    tmp_path: Path,
    unique: str,
    fault: str,
    settings: Mapping[str, str] | None = None,
) -> tuple[Path, dict[str, str], ServiceProcess]:
    """One topic per flow in `modes` (flow name, e.g. "NA->NB", to its copy mode; the aliases are the clusters'
    names), on its source and as the remote topic on its target, with the backlog written; returns the direct config
    (for verifying), each flow's topic, and one data-mirror running every flow through the proxy (started by `with`;
    its config, `mirror.config`, serves other services behind the proxy too). Each flow gets a copy task of its own
    (a Spark core each: long-lived tasks beyond the cores would wait)."""
    named = {cluster.name: cluster for cluster in clusters}
    topics: dict[str, str] = {}
    flows: dict[str, dict[str, str]] = {}
    for flow, mode in modes.items():
        source_alias, target_alias = flow.split("->")
        source, target = named[source_alias], named[target_alias]
        topic = f"net-{fault}-{mode}-{source_alias.lower()}-{unique}"
        make_topic(source.client_properties(), topic, partitions=PARTITIONS)
        make_topic(target.client_properties(), f"{source_alias}.{topic}", partitions=PARTITIONS)  # topic-sync's job
        write(source, topic, 0, BACKLOG)
        topics[flow] = topic
        flows[flow] = {"topics": topic, **MODES[mode], **(settings or {})}
    cores = {"spark.master": f"local[{max(2, len(flows))}]"}
    behind = write_mm2_config(
        tmp_path / "mm2.properties", {name: cluster.via_proxy() for name, cluster in named.items()}, flows, cores
    )
    direct = write_mm2_config(tmp_path / "direct.properties", named, flows, cores)
    mirror = ServiceProcess("data_mirror", behind, tmp_path, env={"STRAIT_COMMIT_INTERVAL_MS": "500"})
    return direct, topics, mirror


def wait_copied(direct: Path, topic: str, records: int, mirror: ServiceProcess, timeout_s: float, flow: str) -> None:
    """Until the verifier finds every source record on the target (what a user's `strait verify` would say); the
    remote topic's end offsets are watched first, since the verifier reads every record each time it runs."""
    config = load_mm2_config(direct).flow_named(flow)
    remote = f"{flow.split('->')[0]}.{topic}"
    target_props = config.target_consumer_props()
    deadline = time.monotonic() + timeout_s
    verified = 0
    while True:
        if end_offsets_sum(target_props, remote, PARTITIONS) >= records:
            verified = verify(direct, flow, topic).totals.verified
            if verified >= records:
                return
        assert mirror.popen is not None
        assert mirror.popen.poll() is None, f"data-mirror exited:\n{mirror.tail()}"
        assert time.monotonic() < deadline, f"{verified} of {records} copied within {timeout_s:.0f}s:\n{mirror.tail()}"
        time.sleep(1)
