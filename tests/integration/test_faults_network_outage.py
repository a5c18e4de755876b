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

from shared.kafka.factories import confluent_consumer
from shared.kafka.partition_reader import read_to_end
from shared.localkafka import KafkaCluster
from shared.records import Checkpoint
from tests.support.network_faults import BACKLOG, DURING, PARTITIONS, TOTAL, copy_flows, proxied, wait_copied, write
from tests.support.service_process import ServiceProcess
from tests.support.verify_oracle import assert_nothing_lost

pytestmark = pytest.mark.slow
__all__ = ["proxied"]  # the clusters' fixture, for pytest
# Two minutes, as the faults issue asks: past the clients' request timeout (30 s by default), so what is in flight
# times out and goes again; past a transaction's timeout (60 s: the target's coordinator aborts it); and past the
# producers' delivery timeout (120 s: a batch the target never acknowledged fails its task, which starts again from
# its last progress).
DARK_S = 130
# One data-mirror runs a flow each way, so one dark link is the source of one flow and the target of the other: NA
# dark tests a lost source in batches and a lost target in exactly-once, NB dark the other two.
MODES = {"NA->NB": "batches", "NB->NA": "exactly-once"}
CHECKPOINTED = "NA->NB"  # the flow whose group's commits are checkpointed


@pytest.mark.parametrize("dark", ["NA", "NB"])
def test_a_link_that_answers_nothing_for_two_minutes_then_heals_loses_nothing(
    proxied: tuple[KafkaCluster, KafkaCluster], dark: str, tmp_path: Path, unique: str
) -> None:
    """A black hole between the services and one cluster for over two minutes while records keep being written on
    both and a group commits: once the link heals, copying goes on both ways and every record arrives, none twice in
    exactly-once, and the group's last commit is checkpointed (same processes, nothing restarted)."""
    na, nb = proxied
    clusters = {"NA": na, "NB": nb}
    group = f"dark-{unique}"
    settings = {"groups": group, "emit.checkpoints.interval.seconds": "1", "sync.group.offsets.enabled": "false"}
    direct, topics, mirror = copy_flows(proxied, MODES, tmp_path, unique, f"dark-{dark.lower()}", settings)
    checkpoint = ServiceProcess("checkpoint", mirror.config, tmp_path)
    source_props, checked_topic = na.client_properties(), topics[CHECKPOINTED]
    with mirror, checkpoint:
        for flow, topic in topics.items():
            wait_copied(direct, topic, PARTITIONS * BACKLOG, mirror, timeout_s=240, flow=flow)
        committed = _commit(source_props, group, checked_topic, BACKLOG // 2)
        _wait_checkpointed(nb.client_properties(), group, committed, checkpoint, timeout_s=120)
        clusters[dark].network.black_hole()
        try:
            for flow, topic in topics.items():
                write(clusters[flow.split("->")[0]], topic, BACKLOG, DURING)
            _commit(source_props, group, checked_topic, BACKLOG)
            time.sleep(DARK_S)
        finally:
            clusters[dark].network.heal()
        for flow, topic in topics.items():
            wait_copied(direct, topic, TOTAL, mirror, timeout_s=300, flow=flow)
        committed = _commit(source_props, group, checked_topic, BACKLOG + DURING)
        _wait_checkpointed(nb.client_properties(), group, committed, checkpoint, timeout_s=180)
        assert checkpoint.stop() == 0, checkpoint.tail()
        assert mirror.stop() == 0, mirror.tail()
    for flow, topic in topics.items():
        assert_nothing_lost(direct, flow, topic, records=TOTAL, exactly_once=MODES[flow] == "exactly-once")


def _commit(props: Mapping[str, str], group: str, topic: str, offset: int) -> dict[int, int]:
    """Commit `offset` on every partition of `topic` for `group`; partition -> the offset committed."""
    consumer = confluent_consumer(props, **{"group.id": group})
    try:
        consumer.commit(offsets=[TopicPartition(topic, p, offset) for p in range(PARTITIONS)], asynchronous=False)
    finally:
        consumer.close()
    return dict.fromkeys(range(PARTITIONS), offset)


def _checkpointed(props: Mapping[str, str], group: str) -> dict[int, int]:
    """partition -> the upstream offset of `group`'s newest checkpoint, read on the target."""
    newest: dict[int, int] = {}
    for record in read_to_end(props, "NA.checkpoints.internal", timeout_s=30):
        if record.key is None or record.value is None:
            continue
        checkpoint = Checkpoint.decode(record.key, record.value)
        if checkpoint.group == group:
            newest[checkpoint.partition] = checkpoint.upstream_offset
    return newest


def _wait_checkpointed(
    props: Mapping[str, str], group: str, committed: Mapping[int, int], checkpoint: ServiceProcess, timeout_s: float
) -> None:
    deadline = time.monotonic() + timeout_s
    while (found := _checkpointed(props, group)) != committed:
        assert checkpoint.popen is not None
        assert checkpoint.popen.poll() is None, checkpoint.tail()
        assert time.monotonic() < deadline, f"checkpoints {found}, commits {committed}:\n{checkpoint.tail()}"
        time.sleep(1)
