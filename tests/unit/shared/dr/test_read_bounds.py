"""How long one read of a DR action may take, whatever the operator gave the drain."""

from __future__ import annotations

import pytest

from shared.dr.flow_reads import read_timeout


@pytest.mark.parametrize("drain_s", [1.0, 3.0, 9.9])
def test_a_short_drain_timeout_still_gives_each_cluster_read_ten_seconds(drain_s: float) -> None:
    # the offset translator caps a drain at its dr_max_wait_s; a busy cluster took 3 s to list offsets
    assert read_timeout(drain_s) == 10.0


def test_a_drain_timeout_between_the_bounds_is_each_read_s_bound() -> None:
    assert read_timeout(20.0) == 20.0


def test_a_long_drain_timeout_still_bounds_each_read_at_thirty_seconds() -> None:
    assert read_timeout(600.0) == 30.0
