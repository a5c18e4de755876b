"""The copy task's logic with injected clients: positions, delivery accounting, refusals, the exactly-once paths."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import KafkaError

from services.data_mirror.task_clients import TaskClients
from services.data_mirror.task_entry import task_loop
from services.data_mirror.task_loop import TaskLoop
from services.data_mirror.work import PartitionWork, TaskSpec
from shared.config.transforms import PredicateSpec, TransformSpec
from shared.records.progress import decode_progress_record
from shared.replication_policy import DefaultReplicationPolicy, IdentityReplicationPolicy, ReplicationPolicy
from tests.unit.services.data_mirror.fake_kafka import (
    FakeCluster,
    FakeConsumer,
    FakeMessage,
    FakeProducer,
    Record,
    fake_clients,
    offset_syncs,
    read_progress,
)

FLOW = "A->B"
PROGRESS = "strait.offsets.A.internal"
SYNCS = "mm2-offset-syncs.B.internal"


def _spec(partitions: int = 2, *, exactly_once: bool = False, slot: int = 0, generation: int = 1) -> TaskSpec:
    return TaskSpec(
        flow=FLOW,
        slot=slot,
        generation=generation,
        partitions=tuple(PartitionWork("orders", p, "A.orders", max_record_bytes=1000) for p in range(partitions)),
        source_consumer={},
        source_admin={},
        target_producer={},
        target_consumer={},
        sync_producer={},
        offset_syncs_topic=SYNCS,
        progress_topic=PROGRESS,
        control_topic="strait.control.internal",
        control_from_offset=0,
        exactly_once=exactly_once,
        copy_batches=False,
        offset_lag_max=100,
        emit_offset_syncs=True,
        reset_to_latest=False,
        commit_interval_ms=50,
        blocked_retry_s=3600,
    )


def _fill(cluster: FakeCluster, partition: int, count: int, *, start: int = 0, size: int = 10) -> None:
    log = cluster.log("orders", partition)
    for i in range(start, start + count):
        log.append(Record(f"k{i}".encode(), f"{partition}:{i}".encode().ljust(size, b"."), 1_000 + i, [("h", b"v")]))


def _until(condition: Callable[[], bool], *, limit_s: float = 5.0) -> Callable[[], bool]:
    """A hand-over request that comes once `condition` holds (bounded, so a broken task cannot hang the test)."""
    deadline = time.monotonic() + limit_s
    return lambda: condition() or time.monotonic() > deadline


def _run(
    cluster: FakeCluster, spec: TaskSpec, producer: FakeProducer, handover: Callable[[], bool]
) -> tuple[TaskLoop, str | None]:
    task = task_loop(spec, fake_clients(cluster, producer, progress_topic=PROGRESS, flow=FLOW, handover=handover))
    result = task.run()
    return task, result.error


def _values(cluster: FakeCluster, partition: int) -> list[bytes | None]:
    return [r.value for r in cluster.committed("A.orders", partition)]


def _syncs(cluster: FakeCluster) -> list[tuple[int, int, int]]:
    return [(sync.partition, sync.upstream_offset, sync.downstream_offset) for sync, _ in offset_syncs(cluster, SYNCS)]


def test_copies_every_record_commits_the_next_position_and_syncs_the_run() -> None:
    cluster = FakeCluster()
    _fill(cluster, 0, 250)
    _fill(cluster, 1, 30)
    producer = FakeProducer(cluster)
    _, error = _run(cluster, _spec(), producer, _until(lambda: len(cluster.log("A.orders", 0)) == 250))
    assert error is None
    assert _values(cluster, 0) == [r.value for r in cluster.log("orders", 0)]
    assert [(r.key, r.headers, r.timestamp) for r in cluster.log("A.orders", 1)] == [
        (r.key, r.headers, r.timestamp) for r in cluster.log("orders", 1)
    ]
    progress = read_progress(cluster, PROGRESS, FLOW)
    assert (progress[("orders", 0)].next_offset, progress[("orders", 1)].next_offset) == (250, 30)
    syncs = _syncs(cluster)
    assert (0, 0, 0) in syncs
    assert (0, 249, 249) in syncs
    assert (1, 29, 29) in syncs
    assert all(upstream == downstream for _, upstream, downstream in syncs)


def test_a_restarted_task_continues_from_the_committed_progress_without_copying_twice() -> None:
    cluster = FakeCluster()
    _fill(cluster, 0, 100)
    _run(cluster, _spec(1), FakeProducer(cluster), _until(lambda: len(cluster.log("A.orders", 0)) == 100))
    _fill(cluster, 0, 50, start=100)
    _, error = _run(
        cluster, _spec(1, generation=2), FakeProducer(cluster), _until(lambda: len(cluster.log("A.orders", 0)) == 150)
    )
    assert error is None
    assert _values(cluster, 0) == [r.value for r in cluster.log("orders", 0)]
    assert read_progress(cluster, PROGRESS, FLOW)[("orders", 0)].next_offset == 150


def test_a_refused_record_stops_only_its_partition_and_is_reported() -> None:
    cluster = FakeCluster()
    _fill(cluster, 0, 20)
    cluster.log("orders", 0).append(Record(None, b"x" * 5000, 1))  # offset 20: above max.message.bytes=1000
    _fill(cluster, 0, 5, start=21)
    _fill(cluster, 1, 40)
    _, error = _run(cluster, _spec(), FakeProducer(cluster), _until(lambda: len(cluster.log("A.orders", 1)) == 40))
    assert error is None
    assert len(_values(cluster, 0)) == 20, "nothing at or after the refused record"
    assert len(_values(cluster, 1)) == 40, "the other partition kept flowing"
    progress = read_progress(cluster, PROGRESS, FLOW)[("orders", 0)]
    assert progress.next_offset == 20
    assert progress.report is not None
    assert progress.report.blocked_offset == 20
    assert "max.message.bytes=1000" in (progress.report.blocked_reason or "")


def test_a_corrupt_source_batch_stops_only_its_partition_before_it_whatever_the_consumer_says_after() -> None:
    """librdkafka follows its CRC error with a made-up batch at a garbage offset and that offset out of range: the
    partition stops at the damaged batch all the same, copies nothing twice and skips nothing."""
    cluster = FakeCluster()
    _fill(cluster, 0, 20)
    cluster.log("orders", 0).append(Record(None, b"damaged", 1, corrupt=True))  # offset 20
    _fill(cluster, 0, 5, start=21)
    _fill(cluster, 1, 40)
    _, error = _run(cluster, _spec(), FakeProducer(cluster), _until(lambda: len(cluster.log("A.orders", 1)) == 40))
    assert error is None
    assert _values(cluster, 0) == [r.value for r in cluster.log("orders", 0)[:20]], "all before it, once"
    assert _values(cluster, 1) == [r.value for r in cluster.log("orders", 1)], "the other partition kept flowing"
    progress = read_progress(cluster, PROGRESS, FLOW)[("orders", 0)]
    assert progress.next_offset == 20
    assert progress.report is not None
    assert progress.report.blocked_offset == 20
    assert "corrupt record batch on the source at orders-0 offset 20" in (progress.report.blocked_reason or "")
    reports = [decode_progress_record(r.value).report for r in cluster.committed(PROGRESS, 0) if r.value is not None]
    assert not [r for r in reports if r is not None and (r.reset_from is not None or r.expired)], "no reset, no skip"


def test_a_corrupt_source_batch_is_read_again_at_each_retry_without_failing_the_task() -> None:
    """Each retry reads the damaged batch again (the consumer no longer fetches the partition after its made-up
    out-of-range report, and refuses a seek): it stops there again, and the task goes on."""
    cluster = FakeCluster()
    _fill(cluster, 0, 20)
    cluster.log("orders", 0).append(Record(None, b"damaged", 1, corrupt=True))
    _fill(cluster, 1, 40)
    spec = dataclasses.replace(_spec(), blocked_retry_s=0.05)
    made: list[FakeConsumer] = []  # the task's consumer, once made
    handover = _until(lambda: made[0].corrupt_reads >= 3)
    clients = fake_clients(cluster, FakeProducer(cluster), progress_topic=PROGRESS, flow=FLOW, handover=handover)
    made.append(clients.consumer)
    result = task_loop(spec, clients).run()
    assert result.error is None
    assert clients.consumer.corrupt_reads >= 3, "read again at each retry"
    assert _values(cluster, 0) == [r.value for r in cluster.log("orders", 0)[:20]], "all before it, once"
    assert _values(cluster, 1) == [r.value for r in cluster.log("orders", 1)]
    progress = read_progress(cluster, PROGRESS, FLOW)[("orders", 0)]
    assert (progress.next_offset, progress.report and progress.report.blocked_offset) == (20, 20)


def test_a_record_whose_header_key_is_not_utf8_stops_only_its_partition_and_is_reported() -> None:
    """confluent-kafka cannot read (nor write) a header key that is not UTF-8: the record is refused for its
    partition, which waits there, reported; the task does not fail, and the slot's other partitions keep copying."""
    cluster = FakeCluster()
    _fill(cluster, 0, 20)
    cluster.log("orders", 0).append(Record(b"k20", b"v", 1, [("h", b"v")], key_not_utf8=True))  # offset 20
    _fill(cluster, 0, 5, start=21)
    _fill(cluster, 1, 40)
    _, error = _run(cluster, _spec(), FakeProducer(cluster), _until(lambda: len(cluster.log("A.orders", 1)) == 40))
    assert error is None
    assert _values(cluster, 0) == [r.value for r in cluster.log("orders", 0)[:20]], "all before it, once"
    assert _values(cluster, 1) == [r.value for r in cluster.log("orders", 1)], "the other partition kept flowing"
    progress = read_progress(cluster, PROGRESS, FLOW)[("orders", 0)]
    assert progress.next_offset == 20
    assert progress.report is not None
    assert progress.report.blocked_offset == 20
    assert "not UTF-8" in (progress.report.blocked_reason or "")


def test_a_record_the_broker_refuses_is_caught_from_its_delivery_report() -> None:
    cluster = FakeCluster()
    _fill(cluster, 0, 30)
    refused = cluster.log("orders", 0)[12]
    producer = FakeProducer(cluster, refuse=lambda record: record.value == refused.value)
    _, error = _run(cluster, _spec(1), producer, _until(lambda: len(cluster.log("A.orders", 0)) >= 12, limit_s=1))
    assert error is None
    progress = read_progress(cluster, PROGRESS, FLOW)[("orders", 0)]
    assert progress.next_offset == 12
    assert progress.report is not None
    assert progress.report.blocked_offset == 12


def test_exactly_once_a_commit_that_failed_after_committing_copies_nothing_twice() -> None:
    cluster = FakeCluster()
    _fill(cluster, 0, 200)
    first = FakeProducer(cluster, transactional=True)
    first.fail_next_commit_after_committing = True
    _, error = _run(cluster, _spec(1, exactly_once=True), first, lambda: False)
    assert error is not None
    assert "commit failed" in error
    copied = len(_values(cluster, 0))
    assert copied > 0, "the first transaction committed"
    _, error = _run(
        cluster,
        _spec(1, exactly_once=True, generation=2),
        FakeProducer(cluster, transactional=True),
        _until(lambda: len(_values(cluster, 0)) >= 200),
    )
    assert error is None
    assert _values(cluster, 0) == [r.value for r in cluster.log("orders", 0)], "no record twice, none lost"


def test_exactly_once_a_copy_that_caught_up_commits_without_waiting_for_the_interval() -> None:
    """With a ten-minute commit interval, a read_committed reader of the target still sees the whole copy once it
    caught up with its source (the task commits then, as MM2 does at each poll), not only at the hand-over."""
    cluster = FakeCluster()
    _fill(cluster, 0, 200)
    _fill(cluster, 1, 50)
    spec = dataclasses.replace(_spec(2, exactly_once=True), commit_interval_ms=600_000)
    visible = _until(lambda: (len(_values(cluster, 0)), len(_values(cluster, 1))) == (200, 50))
    task, error = _run(cluster, spec, FakeProducer(cluster, transactional=True), visible)
    assert error is None
    assert _values(cluster, 0) == [r.value for r in cluster.log("orders", 0)]
    assert _values(cluster, 1) == [r.value for r in cluster.log("orders", 1)]
    assert task.commits >= 2, "the copy was visible before the hand-over's commit"
    assert read_progress(cluster, PROGRESS, FLOW)[("orders", 0)].next_offset == 200


def test_exactly_once_a_refused_record_aborts_the_interval_and_the_next_task_stops_before_it() -> None:
    cluster = FakeCluster()
    _fill(cluster, 0, 30)
    cluster.log("orders", 0).append(Record(None, b"x" * 5000, 1))  # offset 30
    _fill(cluster, 0, 10, start=31)
    _, error = _run(cluster, _spec(1, exactly_once=True), FakeProducer(cluster, transactional=True), lambda: False)
    assert error is not None
    assert "refused record" in error
    progress = read_progress(cluster, PROGRESS, FLOW)[("orders", 0)]
    assert progress.report is not None
    assert progress.report.blocked_offset == 30
    _, error = _run(
        cluster,
        _spec(1, exactly_once=True, generation=2),
        FakeProducer(cluster, transactional=True),
        _until(lambda: len(_values(cluster, 0)) >= 30, limit_s=2),
    )
    assert error is None
    assert _values(cluster, 0) == [r.value for r in cluster.log("orders", 0)[:30]]
    assert read_progress(cluster, PROGRESS, FLOW)[("orders", 0)].next_offset == 30


def test_retriable_source_errors_are_counted_in_the_progress_report_and_copying_goes_on() -> None:
    cluster = FakeCluster()
    _fill(cluster, 0, 20)
    clients = fake_clients(
        cluster,
        FakeProducer(cluster),
        progress_topic=PROGRESS,
        flow=FLOW,
        handover=_until(lambda: len(cluster.log("A.orders", 0)) == 20),
    )
    lost = KafkaError(KafkaError._TRANSPORT, "connection to the source broker lost", fatal=False, retriable=True)
    clients.consumer.errors = [FakeMessage("orders", 0, -1, Record(None, None, 0, None), error=lost) for _ in range(3)]
    result = task_loop(_spec(1), clients).run()
    assert result.error is None
    assert _values(cluster, 0) == [r.value for r in cluster.log("orders", 0)]
    reports = [decode_progress_record(r.value).report for r in cluster.committed(PROGRESS, 0) if r.value is not None]
    assert sum(report.read_errors for report in reports if report is not None) == 3


def _truncate_source_to(cluster: FakeCluster, count: int) -> None:
    """The source partition now ends at `count` (an unclean leader election lost its tail), same topic id."""
    del cluster.log("orders", 0)[count:]


def test_a_position_past_the_source_end_follows_auto_offset_reset_earliest_and_is_reported() -> None:
    cluster = FakeCluster()
    _fill(cluster, 0, 100)
    _run(cluster, _spec(1), FakeProducer(cluster), _until(lambda: len(cluster.log("A.orders", 0)) == 100))
    _truncate_source_to(cluster, 40)
    _fill(cluster, 0, 10, start=1000)  # what the source holds now: 50 records, none of them past 49
    _, error = _run(
        cluster, _spec(1, generation=2), FakeProducer(cluster), _until(lambda: len(cluster.log("A.orders", 0)) == 150)
    )
    assert error is None
    assert _values(cluster, 0)[100:] == [r.value for r in cluster.log("orders", 0)]  # all of it, from the start
    reports = [
        decode_progress_record(r.value).report for r in cluster.committed(PROGRESS, 0)[-3:] if r.value is not None
    ]
    assert [report.reset_from for report in reports if report is not None and report.reset_from is not None] == [100]
    assert read_progress(cluster, PROGRESS, FLOW)[("orders", 0)].next_offset == 50


def test_a_position_past_the_source_end_follows_auto_offset_reset_latest() -> None:
    cluster = FakeCluster()
    _fill(cluster, 0, 100)
    _run(cluster, _spec(1), FakeProducer(cluster), _until(lambda: len(cluster.log("A.orders", 0)) == 100))
    _truncate_source_to(cluster, 40)
    spec = dataclasses.replace(_spec(1, generation=2), reset_to_latest=True)
    moved = _until(lambda: read_progress(cluster, PROGRESS, FLOW)[("orders", 0)].next_offset == 40)
    _, error = _run(cluster, spec, FakeProducer(cluster), moved)
    assert error is None
    assert len(cluster.log("A.orders", 0)) == 100  # nothing of what the source holds now is copied
    assert read_progress(cluster, PROGRESS, FLOW)[("orders", 0)].next_offset == 40


def test_a_source_truncated_under_a_running_task_is_copied_again_from_where_it_diverged() -> None:
    """The new leader's log ends below the position (an unclean election, before anything new is written there):
    the consumer reports the position out of range, and the leader epoch of the position ends where the log
    diverged. Copying goes on there, not at the log start: what was copied stays, nothing is copied twice."""
    cluster = FakeCluster()
    _fill(cluster, 0, 80)
    clients = fake_clients(cluster, FakeProducer(cluster), progress_topic=PROGRESS, flow=FLOW, handover=lambda: False)
    clients.consumer.leader_epoch = 3
    clients.epoch_ends = lambda epochs: {key: 50 for key, epoch in epochs.items() if epoch == 3}
    clients.source_topic_ids = lambda topics: {"orders": "id-1"}

    def truncate() -> None:
        _truncate_source_to(cluster, 50)  # the new leader held 50 records of epoch 3
        _fill(cluster, 0, 10, start=1000)  # then written by it at 50..59

    clients.handover_requested = _out_of_range_at_80(cluster, clients, truncate, copied=90)
    result = task_loop(_with_topic_id(_spec(1), "id-1"), clients).run()
    assert result.error is None
    source = [r.value for r in cluster.log("orders", 0)]
    target = _values(cluster, 0)
    assert len(target) == 90, "the 30 truncated records stay copied, the 10 new ones arrive once"
    assert target[:50] == source[:50]
    assert target[80:] == source[50:]
    assert read_progress(cluster, PROGRESS, FLOW)[("orders", 0)].next_offset == 60


def _out_of_range_at_80(
    cluster: FakeCluster, clients: TaskClients, change: Callable[[], None], *, copied: int, reported: int = 80
) -> Callable[[], bool]:
    """A hand-over check: once all 80 source records are copied and committed, `change` the source and have the
    consumer report position 80 out of range (at offset `reported`: -1001 when its own epoch check found the log
    truncated); hand over once the target holds `copied` records (or after 5 s)."""
    changed = False
    deadline = time.monotonic() + 5

    def handover() -> bool:
        nonlocal changed
        on_target = len(cluster.log("A.orders", 0))
        progress = read_progress(cluster, PROGRESS, FLOW).get(("orders", 0))
        if not changed and on_target == 80 and progress is not None and progress.next_offset == 80:
            changed = True
            change()
            reset = KafkaError(KafkaError._AUTO_OFFSET_RESET, "offset 80 out of range", fatal=False)
            clients.consumer.errors = [FakeMessage("orders", 0, reported, Record(None, None, 0, None), error=reset)]
            return False
        return (changed and on_target >= copied) or time.monotonic() > deadline

    return handover


def _truncating_clients(
    cluster: FakeCluster, epoch_ends: Callable[[dict[tuple[str, int], int]], dict[tuple[str, int], int]]
) -> TaskClients:
    """Clients over 80 copied records of leader epoch 3, whose leaders answer `epoch_ends` (topic id unchanged)."""
    _fill(cluster, 0, 80)
    clients = fake_clients(cluster, FakeProducer(cluster), progress_topic=PROGRESS, flow=FLOW, handover=lambda: False)
    clients.consumer.leader_epoch = 3
    clients.epoch_ends = epoch_ends
    clients.source_topic_ids = lambda topics: {"orders": "id-1"}
    return clients


def test_a_truncation_found_after_the_new_leader_wrote_past_the_position_loses_none_of_the_new_records() -> None:
    """The consumer's own epoch check finds the log truncated at 50 (it reports no offset) when the new leader has
    already written 40 records at 50..89: the position 80 is inside the log again, but 50..79 are new records.
    They are copied, not skipped by going on at 80."""
    cluster = FakeCluster()
    clients = _truncating_clients(cluster, lambda epochs: {key: 50 for key, epoch in epochs.items() if epoch == 3})

    def truncate_and_write_past() -> None:
        _truncate_source_to(cluster, 50)
        _fill(cluster, 0, 40, start=1000)

    clients.handover_requested = _out_of_range_at_80(
        cluster, clients, truncate_and_write_past, copied=120, reported=-1001
    )
    result = task_loop(_with_topic_id(_spec(1), "id-1"), clients).run()
    assert result.error is None
    source, target = [r.value for r in cluster.log("orders", 0)], _values(cluster, 0)
    assert len(target) == 120, "the 30 truncated records stay copied, all 40 new ones arrive once"
    assert target[:50] == source[:50]
    assert target[80:] == source[50:]
    assert read_progress(cluster, PROGRESS, FLOW)[("orders", 0)].next_offset == 90


def test_a_truncation_no_leader_answers_for_yet_fails_the_task_and_the_next_one_copies_nothing_twice() -> None:
    """Right after an unclean election the leaders may not answer yet: the position is neither reset to the log
    start (everything copied twice) nor to its end (new records skipped); the task fails, naming the partition,
    and the next one checks the committed position's epoch before it fetches, so copying goes on where the log
    diverged."""
    cluster = FakeCluster()
    clients = _truncating_clients(cluster, lambda epochs: {})  # every leader answered with an error

    def truncate() -> None:
        _truncate_source_to(cluster, 50)
        _fill(cluster, 0, 10, start=1000)

    clients.handover_requested = _out_of_range_at_80(cluster, clients, truncate, copied=90)
    error = task_loop(_with_topic_id(_spec(1), "id-1"), clients).run().error
    assert error is not None
    assert "no source leader said where the log of orders-0 diverged below offset 80" in error
    assert len(cluster.log("A.orders", 0)) == 80
    again = fake_clients(cluster, FakeProducer(cluster), progress_topic=PROGRESS, flow=FLOW, handover=lambda: False)
    again.epoch_ends = lambda epochs: {key: 50 for key, epoch in epochs.items() if epoch == 3}
    again.handover_requested = _until(lambda: len(cluster.log("A.orders", 0)) >= 90, limit_s=2)
    assert task_loop(_with_topic_id(_spec(1, generation=2), "id-1"), again).run().error is None
    source, target = [r.value for r in cluster.log("orders", 0)], _values(cluster, 0)
    assert len(target) == 90, "nothing of 0..49 is copied again"
    assert target[80:] == source[50:]


def _copied_at_epoch_3() -> FakeCluster:
    """A source partition of 100 records of leader epoch 3, copied and committed by a first task."""
    cluster = FakeCluster()
    clients = fake_clients(cluster, FakeProducer(cluster), progress_topic=PROGRESS, flow=FLOW, handover=lambda: False)
    _fill(cluster, 0, 100)
    clients.consumer.leader_epoch = 3
    clients.handover_requested = _until(lambda: len(cluster.log("A.orders", 0)) == 100)
    assert task_loop(_spec(1), clients).run().error is None
    return cluster


def test_a_log_truncated_while_no_task_ran_below_the_committed_position_is_copied_again_from_where_it_diverged() -> (
    None
):
    """The committed position 100 is past the new log end (50): before resetting by auto.offset.reset, the leader
    is asked where the position's epoch ends (40); the 10 new records at 40..49 are copied, nothing twice."""
    cluster = _copied_at_epoch_3()
    assert read_progress(cluster, PROGRESS, FLOW)[("orders", 0)].leader_epoch == 3
    _truncate_source_to(cluster, 40)
    _fill(cluster, 0, 10, start=1000)
    again = fake_clients(cluster, FakeProducer(cluster), progress_topic=PROGRESS, flow=FLOW, handover=lambda: False)
    again.epoch_ends = lambda epochs: {key: 40 for key, epoch in epochs.items() if epoch == 3}
    again.handover_requested = _until(lambda: len(cluster.log("A.orders", 0)) >= 110, limit_s=2)
    assert task_loop(_spec(1, generation=2), again).run().error is None
    target = _values(cluster, 0)
    assert len(target) == 110
    assert target[100:] == [r.value for r in cluster.log("orders", 0)][40:]
    assert read_progress(cluster, PROGRESS, FLOW)[("orders", 0)].next_offset == 50


def test_a_committed_position_past_the_log_end_that_no_leader_answers_for_is_held_and_copies_nothing() -> None:
    cluster = _copied_at_epoch_3()
    _truncate_source_to(cluster, 40)
    again = fake_clients(cluster, FakeProducer(cluster), progress_topic=PROGRESS, flow=FLOW, handover=lambda: True)
    again.epoch_ends = lambda epochs: {}  # every leader answered with an error
    assert task_loop(_spec(1, generation=2), again).run().error is None
    assert len(cluster.log("A.orders", 0)) == 100
    progress = read_progress(cluster, PROGRESS, FLOW)[("orders", 0)]
    assert progress.next_offset == 100
    assert progress.report is not None
    assert progress.report.blocked_on == "source"
    assert "leader epoch of the committed position" in (progress.report.blocked_reason or "")


def _with_topic_id(spec: TaskSpec, topic_id: str) -> TaskSpec:
    parts = tuple(dataclasses.replace(work, source_topic_id=topic_id) for work in spec.partitions)
    return dataclasses.replace(spec, partitions=parts)


def test_a_topic_made_again_under_a_running_task_is_copied_from_its_start_not_taken_for_a_truncation() -> None:
    """A new topic of the same name starts at leader epoch 0 and its epoch ends at its log end, like a truncation;
    its new id tells it apart: auto.offset.reset (earliest) decides, and nothing of the new topic is skipped."""
    cluster = FakeCluster()
    _fill(cluster, 0, 80)
    clients = fake_clients(cluster, FakeProducer(cluster), progress_topic=PROGRESS, flow=FLOW, handover=lambda: False)
    clients.consumer.leader_epoch = 0
    clients.epoch_ends = lambda epochs: {key: 30 for key in epochs}
    ids = {"orders": "id-1"}
    clients.source_topic_ids = lambda topics: dict(ids)

    def make_again() -> None:
        del cluster.log("orders", 0)[:]
        _fill(cluster, 0, 30, start=2000)  # the new topic: 30 records at 0..29
        ids["orders"] = "id-2"

    clients.handover_requested = _out_of_range_at_80(cluster, clients, make_again, copied=110)
    result = task_loop(_with_topic_id(_spec(1), "id-1"), clients).run()
    assert result.error is None
    assert _values(cluster, 0)[80:] == [r.value for r in cluster.log("orders", 0)], "all 30, from the start"


def test_a_source_log_made_shorter_under_a_running_task_moves_its_progress_back_so_a_restart_skips_none() -> None:
    """A topic deleted and made again with 30 records (brokers without topic ids) while 80 of the old one were
    copied: copying goes on at the new log start, and the committed position goes back with it. A restart once the
    new log has passed 80 goes on at 30; at the old position it would never copy the new records 30..79."""
    cluster = FakeCluster()
    _fill(cluster, 0, 80)
    clients = fake_clients(cluster, FakeProducer(cluster), progress_topic=PROGRESS, flow=FLOW, handover=lambda: False)

    def make_again() -> None:
        del cluster.log("orders", 0)[:]
        _fill(cluster, 0, 30, start=2000)

    clients.handover_requested = _out_of_range_at_80(cluster, clients, make_again, copied=110)
    assert task_loop(_spec(1), clients).run().error is None
    assert _values(cluster, 0)[80:] == [r.value for r in cluster.log("orders", 0)]
    assert read_progress(cluster, PROGRESS, FLOW)[("orders", 0)].next_offset == 30

    _fill(cluster, 0, 70, start=3000)  # the new log grows past the old position before the next task starts
    again = fake_clients(
        cluster,
        FakeProducer(cluster),
        progress_topic=PROGRESS,
        flow=FLOW,
        handover=_until(lambda: len(cluster.log("A.orders", 0)) >= 180, limit_s=2),
    )
    assert task_loop(_spec(1, generation=2), again).run().error is None
    assert _values(cluster, 0)[80:] == [r.value for r in cluster.log("orders", 0)], "every new record, once"
    assert read_progress(cluster, PROGRESS, FLOW)[("orders", 0)].next_offset == 100


def test_a_flow_with_a_filter_copies_the_kept_records_in_order_and_its_syncs_place_each_after_a_gap() -> None:
    """Tombstones dropped by Filter+RecordIsTombstone: the target gets the others in order; the offset syncs
    place the first record after each gap afresh (as after compaction), and the position passes the dropped
    records at the end, so a restart copies nothing again."""
    cluster = FakeCluster()
    log = cluster.log("orders", 0)
    for i in range(10):
        log.append(Record(f"k{i}".encode(), None if i in (3, 4, 9) else f"v{i}".encode(), 1_000 + i, []))
    drop = TransformSpec("dropTombstones", "filter", PredicateSpec("tombstone", "is_tombstone"))
    spec = dataclasses.replace(_spec(1), transforms=(drop,))
    _, error = _run(cluster, spec, FakeProducer(cluster), _until(lambda: len(cluster.log("A.orders", 0)) == 7))
    assert error is None
    assert _values(cluster, 0) == [f"v{i}".encode() for i in (0, 1, 2, 5, 6, 7, 8)]
    syncs = _syncs(cluster)
    assert (0, 0, 0) in syncs
    assert (0, 5, 3) in syncs, "the first record after the dropped ones is placed by a sync of its own"
    assert read_progress(cluster, PROGRESS, FLOW)[("orders", 0)].next_offset == 10
    reports = [decode_progress_record(r.value).report for r in cluster.committed(PROGRESS, 0) if r.value is not None]
    assert sum(report.dropped for report in reports if report is not None) == 3


def test_a_python_transform_that_fails_stops_its_partition_at_the_record_and_reports_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "strict_masks.py").write_text(
        "def mask(record):\n    if record.offset == 4:\n        raise ValueError('not JSON')\n    return record\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    cluster = FakeCluster()
    _fill(cluster, 0, 10)
    _fill(cluster, 1, 10)
    spec = dataclasses.replace(_spec(2), transforms=(TransformSpec("mask", "python", function="strict_masks:mask"),))
    _, error = _run(
        cluster, spec, FakeProducer(cluster), _until(lambda: len(cluster.log("A.orders", 1)) == 10, limit_s=2)
    )
    assert error is None
    assert len(cluster.log("A.orders", 0)) == 4, "partition 0 waits at offset 4"
    progress = read_progress(cluster, PROGRESS, FLOW)
    assert progress[("orders", 0)].next_offset == 4
    report = progress[("orders", 0)].report
    assert report is not None
    assert report.blocked_offset == 4
    assert "transform mask (strict_masks:mask) raised ValueError: not JSON" in (report.blocked_reason or "")


def test_with_provenance_each_first_copy_is_stamped_and_nothing_that_came_from_the_target_goes_back() -> None:
    """Flow A->B with provenance on: a record written at A gets `A:orders:0:<offset>`; one that came from B (its
    header names B, as origin or hop) is not copied; one that came from C is copied with A added as a hop."""
    cluster = FakeCluster()
    log = cluster.log("orders", 0)
    origins: list[bytes | None] = [None, b"B:orders:0:7", None, b"C:orders:0:9", b"C:orders:0:10>B", b"not:valid"]
    for i, origin in enumerate(origins):
        headers = [("h", b"v")] + ([("strait.provenance", origin)] if origin is not None else [])
        log.append(Record(f"k{i}".encode(), f"v{i}".encode(), 1_000 + i, headers))
    spec = dataclasses.replace(_spec(1), provenance=True)
    _, error = _run(cluster, spec, FakeProducer(cluster), _until(lambda: len(cluster.log("A.orders", 0)) == 4))
    assert error is None
    copied = [(r.value, dict(r.headers or []).get("strait.provenance")) for r in cluster.committed("A.orders", 0)]
    assert copied == [
        (b"v0", b"A:orders:0:0"),
        (b"v2", b"A:orders:0:2"),
        (b"v3", b"C:orders:0:9>A"),
        (b"v5", b"not:valid"),
    ]
    assert read_progress(cluster, PROGRESS, FLOW)[("orders", 0)].next_offset == 6


@pytest.mark.parametrize("policy", [IdentityReplicationPolicy(), DefaultReplicationPolicy()], ids=repr)
def test_a_provenance_header_on_a_topic_its_path_does_not_name_is_not_trusted(policy: ReplicationPolicy) -> None:
    """An application on A read a copy from B and wrote a new record with that record's headers (Kafka Streams
    forwards them): the header names B, but a copy from B would be on another topic. That record is A's own: it is
    copied, as an original; a real copy from B (on the topic its path names) still is not."""
    cluster = FakeCluster()
    log = cluster.log("orders", 0)
    from_b = policy.format_remote_topic("B", "orders")
    forwarded = [b"B:payments:0:7", b"B:orders:0:8" if from_b != "orders" else b"C:payments:0:1>B"]
    for i, origin in enumerate(forwarded):
        log.append(Record(f"k{i}".encode(), f"v{i}".encode(), 1_000 + i, [("strait.provenance", origin)]))
    if from_b == "orders":  # under one name on both sides a real copy from B is on `orders` too
        log.append(Record(b"k2", b"v2", 1_002, [("strait.provenance", b"B:orders:0:9")]))
    spec = dataclasses.replace(_spec(1), provenance=True, policy=policy)
    _, error = _run(cluster, spec, FakeProducer(cluster), _until(lambda: len(cluster.log("A.orders", 0)) == 2))
    assert error is None
    copied = [(r.value, dict(r.headers or []).get("strait.provenance")) for r in cluster.committed("A.orders", 0)]
    assert copied == [(b"v0", b"A:orders:0:0"), (b"v1", b"A:orders:0:1")]
    progress = read_progress(cluster, PROGRESS, FLOW)[("orders", 0)]
    assert progress.next_offset == len(log)
    assert progress.report is not None
    assert (progress.report.provenance_ignored, progress.report.returned) == (2, 1 if from_b == "orders" else 0)


def _marked_backlog(cluster: FakeCluster, records: int, every: int) -> list[int]:
    """`records` on partition 0, one in `every` marked for the filter; the offsets the filter keeps."""
    log = cluster.log("orders", 0)
    for i in range(records):
        headers = [("drop-me", b"1")] if i % every == 2 else []
        log.append(Record(f"k{i}".encode(), f"v{i}".encode(), 1_000 + i, headers))
    return [i for i in range(records) if i % every != 2]


def _filtered(spec: TaskSpec) -> TaskSpec:
    drop = TransformSpec("dropMarked", "filter", PredicateSpec("marked", "has_header_key", "drop-me"))
    return dataclasses.replace(spec, transforms=(drop,), commit_interval_ms=600_000)  # no interval commit


def test_a_filtered_backlog_copied_within_one_commit_interval_keeps_a_sync_at_both_ends_of_every_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A filter that drops one record in 5 splits a partition into 2,000 runs, 4,000 syncs, all copied between two
    interval commits. Every run keeps its syncs at both ends (the task commits early, once a partition holds a
    quarter of its cap, rather than leave syncs out), so every copied record translates exactly: a group paused
    anywhere in the backlog resumes on the target without re-reading."""
    monkeypatch.setattr("services.data_mirror.task_loop.EARLY_COMMIT_GAP_S", 0.0)  # not at the machine's pace
    cluster = FakeCluster()
    kept = _marked_backlog(cluster, 10_000, 5)
    task, error = _run(
        cluster, _filtered(_spec(1)), FakeProducer(cluster), _until(lambda: len(cluster.log("A.orders", 0)) == 8_000)
    )
    assert error is None
    assert _values(cluster, 0) == [f"v{i}".encode() for i in kept]
    synced = {upstream: downstream for _, upstream, downstream in _syncs(cluster)}
    dropped = range(2, 10_000, 5)  # each run ends just before a dropped record and the next starts just after it
    missing = [i for i in dropped if i - 1 not in synced or i + 1 not in synced]
    assert missing == [], f"{len(missing)} of {len(dropped)} gaps lack the syncs at their ends"
    assert all(synced[up] == kept.index(up) for up in (1, 3, 9_996, 9_998, 9_999))
    assert task.commits >= 2, "a commit came early, as the waiting syncs filled (and the final one)"


def test_with_offset_syncs_off_a_filtered_backlog_asks_for_no_early_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("services.data_mirror.task_loop.EARLY_COMMIT_GAP_S", 0.0)
    cluster = FakeCluster()
    kept = _marked_backlog(cluster, 10_000, 5)
    spec = dataclasses.replace(_filtered(_spec(1)), emit_offset_syncs=False)
    done = _until(lambda: len(cluster.log("A.orders", 0)) == 8_000)
    clients = fake_clients(cluster, FakeProducer(cluster), progress_topic=PROGRESS, flow=FLOW, handover=done)
    task = task_loop(spec, dataclasses.replace(clients, sync_producer=None))  # as connect() builds them
    assert task.run().error is None
    assert _values(cluster, 0) == [f"v{i}".encode() for i in kept]
    assert task.commits == 1, "only the final commit: no syncs wait, none ask for a commit"
    assert _syncs(cluster) == []


def test_a_record_a_transform_failed_on_after_dropped_ones_is_tried_again_when_its_retry_is_due(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Filter drops 2 and 3, a Python transform fails once at 4: the partition waits at 4 with nothing before it
    left to copy (the last record acknowledged is 1), and tries it again when its retry is due instead of waiting
    for a record at 2 that never comes."""
    (tmp_path / "flaky_masks.py").write_text(
        "failed = []\n"
        "def mask(record):\n"
        "    if record.offset == 4 and not failed:\n"
        "        failed.append(4)\n"
        "        raise ValueError('flaky')\n"
        "    return record\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    cluster = FakeCluster()
    log = cluster.log("orders", 0)
    for i in range(8):
        log.append(Record(f"k{i}".encode(), None if i in (2, 3) else f"v{i}".encode(), 1_000 + i, []))
    chain = (
        TransformSpec("dropTombstones", "filter", PredicateSpec("tombstone", "is_tombstone")),
        TransformSpec("mask", "python", function="flaky_masks:mask"),
    )
    spec = dataclasses.replace(_spec(1), transforms=chain, blocked_retry_s=0.05)
    _, error = _run(cluster, spec, FakeProducer(cluster), _until(lambda: len(cluster.log("A.orders", 0)) == 6))
    assert error is None
    assert _values(cluster, 0) == [f"v{i}".encode() for i in (0, 1, 4, 5, 6, 7)]
    assert read_progress(cluster, PROGRESS, FLOW)[("orders", 0)].next_offset == 8
