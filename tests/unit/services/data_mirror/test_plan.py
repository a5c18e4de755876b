"""Epoch planning: stable round-robin slots, refused records respected, nothing planned twice."""

from __future__ import annotations

from services.data_mirror.plan import FlowClients, PartitionState, plan_epoch

CLIENTS = FlowClients(
    flow="A->B",
    source_consumer={"bootstrap.servers": "a:1"},
    source_admin={"bootstrap.servers": "a:1"},
    target_producer={"bootstrap.servers": "b:1"},
    sync_producer={"bootstrap.servers": "a:1"},
    offset_syncs_topic="mm2-offset-syncs.B.internal",
    progress_topic="strait.offsets.A.internal",
    exactly_once=False,
    offset_lag_max=100,
    emit_offset_syncs=True,
    reset_to_latest=False,
)


def _states(count: int) -> list[PartitionState]:
    return [PartitionState("A->B", "orders", p, "A.orders", next_offset=p * 10) for p in range(count)]


def test_partitions_are_spread_over_tasks_once_each() -> None:
    specs = plan_epoch(_states(5), {"A->B": CLIENTS}, tasks_per_flow=2, epoch_ms=1000, now=0)
    assert [[w.partition for w in spec.partitions] for spec in specs] == [[0, 2, 4], [1, 3]]
    assert [spec.slot for spec in specs] == [0, 1]
    assert specs[0].partitions[1].start_offset == 20


def test_fewer_partitions_than_tasks_gives_fewer_tasks() -> None:
    assert len(plan_epoch(_states(1), {"A->B": CLIENTS}, tasks_per_flow=8, epoch_ms=1000, now=0)) == 1
    assert plan_epoch([], {"A->B": CLIENTS}, tasks_per_flow=8, epoch_ms=1000, now=0) == []


def test_a_refused_record_bounds_its_partition_until_the_retry_time() -> None:
    state = PartitionState("A->B", "orders", 0, "A.orders", next_offset=90, blocked_at=100, retry_at=50.0)
    work = state.work(now=10.0)
    assert work is not None
    assert work.stop_before == 100
    state.next_offset = 100
    assert state.work(now=10.0) is None, "nothing to copy before the refused record"
    retry = state.work(now=60.0)
    assert retry is not None
    assert retry.stop_before is None, "after the retry time the refused record is tried again"


def test_records_behind_needs_both_ends() -> None:
    state = PartitionState("A->B", "orders", 0, "A.orders")
    assert state.records_behind is None
    state.next_offset, state.high_watermark = 40, 100
    assert state.records_behind == 60


def test_work_carries_the_topic_ids_and_a_restart_forgets_a_refused_record() -> None:
    state = PartitionState(
        "A->B", "orders", 0, "A.orders", next_offset=500, blocked_at=510, retry_at=99.0, source_topic_id="s1"
    )
    state.remote_topic_id = "r1"
    work = state.work(now=0.0)
    assert work is not None
    assert (work.source_topic_id, work.remote_topic_id, work.stop_before) == ("s1", "r1", 510)
    state.restart_from(0)
    again = state.work(now=0.0)
    assert again is not None
    assert (again.start_offset, again.stop_before) == (0, None)
    assert state.blocked_at is None
