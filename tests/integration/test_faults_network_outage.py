"""A link between Strait and one cluster that answers nothing for a while, then heals (a black hole: requests go
out, nothing comes back, nothing closes), on the fault proxy and broker-default clusters of the network-fault
tests (tests/support/network_faults.py); each test ends with `strait verify` over every record."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from shared.localkafka import KafkaCluster
from tests.support.network_faults import BACKLOG, DURING, PARTITIONS, TOTAL, copy_through, proxied, wait_copied, write
from tests.support.verify_oracle import assert_nothing_lost

pytestmark = pytest.mark.slow
__all__ = ["proxied"]  # the clusters' fixture, for pytest
# Two minutes, as the faults issue asks: past the clients' request timeout (30 s by default), so what is in flight
# times out and goes again; past a transaction's timeout (60 s: the target's coordinator aborts it); and past the
# producers' delivery timeout (120 s: a batch the target never acknowledged fails its task, which starts again from
# its last progress).
DARK_S = 130


@pytest.mark.parametrize(("side", "mode"), [("source", "batches"), ("target", "batches"), ("target", "exactly-once")])
def test_a_link_that_answers_nothing_for_two_minutes_then_heals_loses_nothing(
    proxied: tuple[KafkaCluster, KafkaCluster], side: str, mode: str, tmp_path: Path, unique: str
) -> None:
    """A black hole between data-mirror and one cluster for over two minutes while records keep being written:
    once the link heals, copying goes on and every record arrives."""
    source, target = proxied
    dark = source if side == "source" else target
    direct, topic, mirror = copy_through(source, target, mode, tmp_path, unique, f"dark-{side}")
    with mirror:
        wait_copied(direct, topic, PARTITIONS * BACKLOG, mirror, timeout_s=240)
        dark.network.black_hole()
        try:
            write(source, topic, BACKLOG, DURING)
            time.sleep(DARK_S)
        finally:
            dark.network.heal()
        wait_copied(direct, topic, TOTAL, mirror, timeout_s=300)
        assert mirror.stop() == 0, mirror.tail()
    assert_nothing_lost(direct, "NA->NB", topic, records=TOTAL, exactly_once=mode == "exactly-once")
