"""A link between Strait and one cluster that answers nothing for a while, then heals (a black hole: requests go
out, nothing comes back, nothing closes), on the fault proxy and broker-default clusters of the network-fault
tests (tests/support/network_faults.py); each test ends with `strait verify` over every record."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from shared.localkafka import KafkaCluster
from tests.support.network_faults import BACKLOG, DURING, PARTITIONS, TOTAL, copy_flows, proxied, wait_copied, write
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


@pytest.mark.parametrize("dark", ["NA", "NB"])
def test_a_link_that_answers_nothing_for_two_minutes_then_heals_loses_nothing(
    proxied: tuple[KafkaCluster, KafkaCluster], dark: str, tmp_path: Path, unique: str
) -> None:
    """A black hole between data-mirror and one cluster for over two minutes while records keep being written on
    both: once the link heals, copying goes on both ways and every record arrives, none twice in exactly-once."""
    na, nb = proxied
    clusters = {"NA": na, "NB": nb}
    direct, topics, mirror = copy_flows(na, nb, MODES, tmp_path, unique, f"dark-{dark.lower()}")
    with mirror:
        for flow, topic in topics.items():
            wait_copied(direct, topic, PARTITIONS * BACKLOG, mirror, timeout_s=240, flow=flow)
        clusters[dark].network.black_hole()
        try:
            for flow, topic in topics.items():
                write(clusters[flow.split("->")[0]], topic, BACKLOG, DURING)
            time.sleep(DARK_S)
        finally:
            clusters[dark].network.heal()
        for flow, topic in topics.items():
            wait_copied(direct, topic, TOTAL, mirror, timeout_s=300, flow=flow)
        assert mirror.stop() == 0, mirror.tail()
    for flow, topic in topics.items():
        assert_nothing_lost(direct, flow, topic, records=TOTAL, exactly_once=MODES[flow] == "exactly-once")
