"""A link to the source narrower than what is written to it, then widened: the copy falls behind while the link is
capped and catches up once it is lifted, losing nothing (a WAN link shared with other traffic, or a cloud egress
limit, as users meet them). On the fault proxy and broker-default clusters of the network-fault tests
(tests/support/network_faults.py); each test ends with `strait verify` over every record."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared.localkafka import KafkaCluster
from tests.support.network_faults import BACKLOG, PARTITIONS, copy_flows, proxied_trio, wait_copied, write
from tests.support.verify_oracle import assert_nothing_lost, verify

pytestmark = pytest.mark.slow
__all__ = ["proxied_trio"]  # the clusters' fixture, for pytest
CAP_KIB_S = 128  # per connection, broker -> data-mirror: what the source's fetch answers may bring
CAPPED = 3_000  # per partition, written while the cap is on: ~2.7 MB, 7 s even if three connections share the cap
# Two flows from the capped source, one per mode, under one data-mirror.
MODES = {"NA->NB": "batches", "NA->NC": "exactly-once"}


def test_a_source_link_capped_below_the_write_rate_falls_behind_then_drains_once_lifted(
    proxied_trio: tuple[KafkaCluster, KafkaCluster, KafkaCluster], tmp_path: Path, unique: str
) -> None:
    source = proxied_trio[0]
    total = PARTITIONS * (BACKLOG + CAPPED)
    direct, topics, mirror = copy_flows(proxied_trio, MODES, tmp_path, unique, "capped")
    with mirror:
        for flow, topic in topics.items():
            wait_copied(direct, topic, PARTITIONS * BACKLOG, mirror, timeout_s=240, flow=flow)
        source.network.bandwidth(CAP_KIB_S)
        try:
            for topic in topics.values():
                write(source, topic, BACKLOG, CAPPED)  # direct to the source: written at full speed
            for flow, topic in topics.items():
                behind = verify(direct, flow, topic).totals.verified
                # What was written in a second or two needs several seconds more through the capped link.
                assert behind < total, f"{flow} kept up through a link narrower than what was written"
        finally:
            source.network.heal()
        for flow, topic in topics.items():
            wait_copied(direct, topic, total, mirror, timeout_s=300, flow=flow)
        assert mirror.stop() == 0, mirror.tail()
    for flow, topic in topics.items():
        assert_nothing_lost(direct, flow, topic, records=total, exactly_once=MODES[flow] == "exactly-once")
