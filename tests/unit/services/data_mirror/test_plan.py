"""Slot planning: every partition in one slot, stable when topics or partitions are added."""

from __future__ import annotations

from services.data_mirror.plan import PartitionState, assign_slots, slot_of


def _states(topic: str, count: int) -> list[PartitionState]:
    return [PartitionState("A->B", topic, p, f"A.{topic}") for p in range(count)]


def _owners(plan: dict[int, tuple]) -> dict[tuple[str, int], int]:  # type: ignore[type-arg]
    return {(work.source_topic, work.partition): slot for slot, works in plan.items() for work in works}


def test_every_partition_is_in_exactly_one_slot_and_spread_evenly() -> None:
    plan = assign_slots(_states("orders", 8), slots=4)
    owners = _owners(plan)
    assert len(owners) == 8
    assert sorted(len(works) for works in plan.values()) == [2, 2, 2, 2]
    assert sum(len(works) for works in plan.values()) == 8


def test_adding_partitions_or_topics_moves_no_partition() -> None:
    before = _owners(assign_slots(_states("orders", 4), slots=3))
    after = _owners(assign_slots(_states("orders", 6) + _states("payments", 5), slots=3))
    assert all(after[key] == slot for key, slot in before.items())


def test_fewer_partitions_than_slots_leaves_slots_empty() -> None:
    plan = assign_slots(_states("orders", 1), slots=8)
    assert list(plan) == [slot_of("orders", 0, 8)]
    assert assign_slots([], slots=8) == {}


def test_records_behind_needs_both_ends() -> None:
    state = PartitionState("A->B", "orders", 0, "A.orders")
    assert state.records_behind is None
    state.next_offset, state.high_watermark = 40, 100
    assert state.records_behind == 60


def test_work_carries_the_topic_ids_and_size_limit() -> None:
    state = PartitionState("A->B", "orders", 0, "A.orders", max_record_bytes=1000, source_topic_id="s1")
    state.remote_topic_id = "r1"
    work = state.work()
    assert (work.source_topic_id, work.remote_topic_id, work.max_record_bytes) == ("s1", "r1", 1000)
