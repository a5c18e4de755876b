"""A link between Strait and one cluster that answers nothing for a while, then heals (a black hole: requests go
out, nothing comes back, nothing closes), on the fault proxy and broker-default clusters of the network-fault
tests (tests/support/network_faults.py); each test ends with `strait verify` over every record.

The checkpoint service runs behind the proxy too: the soak once found it writing no checkpoint ever again after a
39 s black hole to its target (a status record's send that never ended held its rounds)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path

import pytest
from confluent_kafka import TopicPartition

from shared.kafka.partition_reader import read_to_end
from shared.localkafka import KafkaCluster
from shared.records import Checkpoint
from tests.support.kafka_io import commit_offsets
from tests.support.network_faults import (
    BACKLOG,
    DURING,
    PARTITIONS,
    TOTAL,
    copy_flows,
    proxied_pairs,
    wait_copied,
    write,
)
from tests.support.service_process import ServiceProcess
from tests.support.verify_oracle import assert_nothing_lost

pytestmark = pytest.mark.slow
__all__ = ["proxied_pairs"]  # the clusters' fixture, for pytest
# Two minutes, as the faults issue asks: past the clients' request timeout (30 s by default), so what is in flight
# times out and goes again; past a transaction's timeout (60 s: the target's coordinator aborts it); and past the
# producers' delivery timeout (120 s: a batch the target never acknowledged fails its task, which starts again from
# its last progress).
DARK_S = 130
# One data-mirror runs a flow each way between NA and NB and between NC and ND, and one link of each pair goes dark
# at once: NA is the lost source of a flow in batches and the lost target of one in exactly-once (and the source of
# the checkpointed group's commits); ND the lost target in batches and the lost source in exactly-once (and where
# the checkpoints go).
MODES = {"NA->NB": "batches", "NB->NA": "exactly-once", "NC->ND": "batches", "ND->NC": "exactly-once"}
DARK = ("NA", "ND")
CHECKPOINTED = ("NA->NB", "NC->ND")  # the flows whose group's commits are checkpointed


def test_a_link_that_answers_nothing_for_two_minutes_then_heals_loses_nothing(
    proxied_pairs: tuple[KafkaCluster, ...], tmp_path: Path, unique: str
) -> None:
    """A black hole between the services and one cluster of each pair for over two minutes while records keep being
    written everywhere and a group commits on each pair: once the links heal, copying goes on in every flow and every
    record arrives, none twice in exactly-once, and each group's last commit is checkpointed (same processes,
    nothing restarted)."""
    clusters = {cluster.name: cluster for cluster in proxied_pairs}
    group = f"dark-{unique}"
    settings = {"groups": group, "emit.checkpoints.interval.seconds": "1", "sync.group.offsets.enabled": "false"}
    direct, topics, mirror = copy_flows(proxied_pairs, MODES, tmp_path, unique, "dark", settings)
    checkpoint = ServiceProcess("checkpoint", mirror.config, tmp_path)
    with mirror, checkpoint:
        for flow, topic in topics.items():
            wait_copied(direct, topic, PARTITIONS * BACKLOG, mirror, timeout_s=240, flow=flow)
        for flow in CHECKPOINTED:
            committed = _commit(clusters, flow, group, topics[flow], BACKLOG // 2)
            _wait_checkpointed(clusters, flow, group, committed, checkpoint, timeout_s=120)
        try:
            for dark in DARK:
                clusters[dark].network.black_hole()
            for flow, topic in topics.items():
                write(clusters[flow.split("->")[0]], topic, BACKLOG, DURING)
            for flow in CHECKPOINTED:
                _commit(clusters, flow, group, topics[flow], BACKLOG)
            time.sleep(DARK_S)
        finally:
            for dark in DARK:
                clusters[dark].network.heal()
        for flow, topic in topics.items():
            wait_copied(direct, topic, TOTAL, mirror, timeout_s=300, flow=flow)
        for flow in CHECKPOINTED:
            committed = _commit(clusters, flow, group, topics[flow], BACKLOG + DURING)
            _wait_checkpointed(clusters, flow, group, committed, checkpoint, timeout_s=180)
        assert checkpoint.stop() == 0, checkpoint.tail()
        assert mirror.stop() == 0, mirror.tail()
    for flow, topic in topics.items():
        assert_nothing_lost(direct, flow, topic, records=TOTAL, exactly_once=MODES[flow] == "exactly-once")


def _commit(clusters: Mapping[str, KafkaCluster], flow: str, group: str, topic: str, offset: int) -> dict[int, int]:
    """Commit `offset` on every partition of `topic` for `group` on `flow`'s source; partition -> the offset."""
    source = clusters[flow.split("->")[0]].client_properties()
    commit_offsets(source, group, [TopicPartition(topic, p, offset) for p in range(PARTITIONS)])
    return dict.fromkeys(range(PARTITIONS), offset)


def _checkpointed(clusters: Mapping[str, KafkaCluster], flow: str, group: str) -> dict[int, int]:
    """partition -> the upstream offset of `group`'s newest checkpoint on `flow`, read on its target."""
    source, target = flow.split("->")
    newest: dict[int, int] = {}
    for record in read_to_end(clusters[target].client_properties(), f"{source}.checkpoints.internal", timeout_s=30):
        if record.key is None or record.value is None:
            continue
        checkpoint = Checkpoint.decode(record.key, record.value)
        if checkpoint.group == group:
            newest[checkpoint.partition] = checkpoint.upstream_offset
    return newest


def _wait_checkpointed(
    clusters: Mapping[str, KafkaCluster],
    flow: str,
    group: str,
    committed: Mapping[int, int],
    checkpoint: ServiceProcess,
    timeout_s: float,
) -> None:
    deadline = time.monotonic() + timeout_s
    while (found := _checkpointed(clusters, flow, group)) != committed:
        assert checkpoint.popen is not None
        assert checkpoint.popen.poll() is None, checkpoint.tail()
        assert time.monotonic() < deadline, f"{flow}: checkpoints {found}, commits {committed}:\n{checkpoint.tail()}"
        time.sleep(1)
