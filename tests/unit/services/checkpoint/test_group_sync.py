"""Group offset sync decisions (MM2's testSyncOffset vectors and Strait's never-rewind rule) and reporting."""

from __future__ import annotations

import pytest

from services.checkpoint.group_sync import ActiveGroups, decide_group_sync
from shared.kafka.group_offsets import CommittedOffset
from shared.records import Checkpoint

T0 = ("A.topic1", 0)
T1 = ("A.topic1", 1)


def checkpoints(*items: tuple[tuple[str, int], int]) -> dict[tuple[str, int], Checkpoint]:
    return {tp: Checkpoint("g", tp[0], tp[1], downstream + 100, downstream, "meta") for tp, downstream in items}


def test_idle_groups_move_forward_to_their_checkpoints_like_mm2() -> None:
    decision = decide_group_sync("EMPTY", {T0: CommittedOffset(100)}, checkpoints((T0, 101)))
    assert decision.action == "sync"
    assert decision.offsets == {T0: CommittedOffset(101, "meta")}


@pytest.mark.parametrize("state", [None, "DEAD"])
def test_an_absent_group_gets_every_checkpoint(state: str | None) -> None:
    decision = decide_group_sync(state, {}, checkpoints((T0, 51), (T1, 7)))
    assert decision.action == "sync"
    assert decision.offsets == {T0: CommittedOffset(51, "meta"), T1: CommittedOffset(7, "meta")}


def test_a_group_ahead_on_the_target_is_never_moved_back() -> None:
    target = {T0: CommittedOffset(240), T1: CommittedOffset(3)}
    decision = decide_group_sync("EMPTY", target, checkpoints((T0, 100), (T1, 10)))
    assert decision.offsets == {T1: CommittedOffset(10, "meta")}
    assert decide_group_sync("EMPTY", {T0: CommittedOffset(100)}, checkpoints((T0, 100))).action == "current"


def test_a_partition_new_on_the_target_is_synced() -> None:
    decision = decide_group_sync("EMPTY", {T0: CommittedOffset(500)}, checkpoints((T0, 400), (T1, 20)))
    assert decision.offsets == {T1: CommittedOffset(20, "meta")}


@pytest.mark.parametrize("state", ["STABLE", "PREPARING_REBALANCING", "COMPLETING_REBALANCING", "UNKNOWN"])
def test_a_group_with_members_is_left_alone(state: str) -> None:
    decision = decide_group_sync(state, {T0: CommittedOffset(1)}, checkpoints((T0, 101)))
    assert decision.action == "active"
    assert decision.offsets == {}


def test_active_groups_are_reported_once_per_state_change() -> None:
    active = ActiveGroups()
    assert not active.observe("g", "EMPTY")  # idle and never seen active: nothing to report
    assert active.observe("g", "STABLE")
    assert not active.observe("g", "STABLE")
    assert active.observe("g", "PREPARING_REBALANCING")
    assert active.states() == {"g": "PREPARING_REBALANCING"}
    assert active.observe("g", "EMPTY")
    assert len(active) == 0
    active.observe("h", "STABLE")
    active.forget_except({"g"})
    assert active.states() == {}
