"""Which transactional ids belong to a flow's copy-task slots (fencing finds them among a cluster's ids)."""

from __future__ import annotations

from shared.control.topic_names import is_mirror_transactional_id, mirror_transactional_id


def test_every_slot_of_the_flow_and_nothing_else_is_the_flows() -> None:
    assert all(is_mirror_transactional_id("A->B", mirror_transactional_id("A->B", slot)) for slot in (0, 8, 11, 250))
    assert not is_mirror_transactional_id("A->B", mirror_transactional_id("A->B2", 3))
    assert not is_mirror_transactional_id("A->B", mirror_transactional_id("C->B", 3))
    assert not is_mirror_transactional_id("A->B", "strait-data-mirror.A->B.")
    assert not is_mirror_transactional_id("A->B", "strait-data-mirror.A->B.1x")
