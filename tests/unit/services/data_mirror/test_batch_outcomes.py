"""Batch forwarding against a target that answers with errors and a source that changes under the copy: whatever
happens, every record arrives once, in order, and progress never passes a record the target did not write.

Through public entry points only (`fake_batch_link`): a whole task (`task_entry.task_loop(...).run()`) when what
counts is the progress it commits, the copier's own methods when it is how it fetches; the real batch producer in
front of a target that checks sequences as Kafka does.
"""

from __future__ import annotations

import math
import struct
import time
from typing import Any

import pytest
from aiokafka.record.legacy_records import LegacyRecordBatchBuilder

from services.data_mirror import fetch_lanes
from shared.kafka.batch_producer import DEFAULT_BUFFER_BYTES
from shared.kafka.error_codes import TOPIC_AUTHORIZATION_FAILED, UNKNOWN_SERVER_ERROR
from shared.records.progress import CopyReport, Progress, ProgressKey
from tests.unit.services.data_mirror.fake_batch_link import (
    KEY,
    REMOTE,
    FakeSource,
    FakeTarget,
    batch_spec,
    damaged,
    keys,
    open_copier,
    run_task,
    steps_until,
    stored,
)
from tests.unit.services.data_mirror.test_copy_task import PROGRESS
from tests.unit.shared.kafka.test_record_batches import _batch as stored_batch


# -- what the target refuses -------------------------------------------------------------------------------------
def test_a_batch_answered_with_unknown_server_error_is_sent_again_and_nothing_is_lost() -> None:
    source = FakeSource({KEY: b"".join(stored_batch(base, 100) for base in range(0, 300, 100))})
    target = FakeTarget()
    target.log(REMOTE, 0).script.append(UNKNOWN_SERVER_ERROR)  # the first Produce: the broker's error -1
    assert run_task(batch_spec(), source, target, lambda: len(target.keys()) >= 300).error is None
    assert target.keys() == keys(0, 300), "every record, once, in order"
    assert target.log(REMOTE, 0).batch_sizes[:100] == [1] * 100, "the refused batch went again record by record"
    assert target.progress()[-1].next_offset == 300
    assert target.blocked() == []


def test_progress_never_passes_records_the_target_refused_with_unknown_server_error() -> None:
    """A record the target keeps refusing with -1 stops its partition there: progress stays before it."""
    source = FakeSource({KEY: stored_batch(0, 10)})
    target = FakeTarget()
    target.log(REMOTE, 0).script.extend([UNKNOWN_SERVER_ERROR] * 2)  # the batch, then its first record on its own
    assert run_task(batch_spec(), source, target, lambda: bool(target.blocked())).error is None
    assert target.keys() == []
    assert [p.next_offset for p in target.progress()] == [0] * len(target.progress())
    report = target.progress()[-1].report
    assert report is not None
    assert report.blocked_offset == 0
    assert "UNKNOWN_SERVER_ERROR" in (report.blocked_reason or "")


def test_a_partition_stopped_at_a_refused_record_is_not_fetched_while_it_waits() -> None:
    """Nothing at or after a refused record is sent before it: fetching the partition meanwhile would only bring
    data to drop, so it leaves the fetches until its retry is due."""
    source = FakeSource({KEY: stored_batch(0, 10)})
    target = FakeTarget()
    target.log(REMOTE, 0).script.extend([UNKNOWN_SERVER_ERROR] * 2)
    seen: list[tuple[int, int]] = []  # (fetches made, stops reported) when the stop was first seen

    def three_commits_after_the_stop() -> bool:
        if target.blocked() and not seen:
            seen.append((len(source.fetches), len(target.blocked())))
        return bool(seen) and len(target.blocked()) >= seen[0][1] + 3

    assert run_task(batch_spec(), source, target, three_commits_after_the_stop).error is None
    assert len(target.blocked()) >= seen[0][1] + 3, "the task went on committing while the partition waited"
    assert [fetch for fetch in source.fetches[seen[0][0] :] if KEY in fetch.positions] == []


def _healed_once_waiting(source: FakeSource, target: FakeTarget, at: int, reason: str, whole: bytes, end: int) -> Any:
    """A hand-over condition: once the task reported waiting at `at`, the source reads `whole` (the damaged batch
    reads whole again); the task is handed over once the target holds `end` records."""

    def until() -> bool:
        if target.waited_at(at, reason) and source.log_of(KEY).batches != whole:
            source.put(KEY, whole)
        return len(target.keys()) >= end

    return until


def test_a_batch_refused_as_a_whole_before_a_corrupt_one_is_sent_again_and_the_partition_waits_at_it() -> None:
    """The fetch brought a batch and a damaged one after it: the partition stopped at the damage when the target
    refused the first batch as a whole. That batch is sent again record by record; the partition then waits at the
    damaged batch and reads it again when its retry is due, instead of stalling before the refused batch for good."""
    whole = stored_batch(0, 100) + stored_batch(100, 100)
    source = FakeSource({KEY: stored_batch(0, 100) + damaged(stored_batch(100, 100))})
    target = FakeTarget()
    target.log(REMOTE, 0).script.append(UNKNOWN_SERVER_ERROR)
    corrupt = "corrupt record batch on the source at orders-0 offset 100"
    until = _healed_once_waiting(source, target, 100, corrupt, whole, 200)
    assert run_task(batch_spec(blocked_retry_s=0), source, target, until).error is None
    assert target.waited_at(100, corrupt), "the refused batch copied, the partition waited at the damaged one"
    assert target.keys() == keys(0, 200), "its retry read it again: every record, once, in order"
    assert target.progress()[-1].next_offset == 200


def test_a_batch_refused_as_a_whole_before_an_earlier_tasks_refusal_is_sent_again_up_to_it() -> None:
    """An earlier task stopped at 150: the copy goes up to it and stops there, and the target then refuses the batch
    at 0 as a whole. It is sent again, the partition waits at 150 again, and its retry copies on from there."""
    source = FakeSource({KEY: stored_batch(0, 100) + stored_batch(100, 100)})
    target = FakeTarget()
    target.log(REMOTE, 0).script.append(UNKNOWN_SERVER_ERROR)
    earlier = CopyReport(
        blocked_offset=150, blocked_reason="MESSAGE_TOO_LARGE", blocked_since_ms=int(time.time() * 1000)
    )
    result = run_task(
        batch_spec(blocked_retry_s=0),
        source,
        target,
        lambda: len(target.keys()) >= 200,
        committed={KEY: Progress(0, report=earlier)},
    )
    assert result.error is None
    assert target.waited_at(150, "MESSAGE_TOO_LARGE"), "copied up to the earlier refusal, and waited there"
    assert target.keys() == keys(0, 200), "every record, once, in order"


def test_a_corrupt_compressed_legacy_message_set_stops_its_partition_at_its_first_record() -> None:
    """A v1 wrapper holding offsets 10..19 (gzip) fails its CRC: its offset is its last inner record's, but the
    partition must wait before the first one, where its retry reads the wrapper again and nothing is skipped."""
    wrapper = LegacyRecordBatchBuilder(1, 1, 1 << 20)  # magic 1, gzip
    for index in range(10):
        wrapper.append(index, 1_000 + index, f"k{10 + index}".encode(), b"v" * 20)
    legacy = bytearray(wrapper.build())
    struct.pack_into(">q", legacy, 0, 19)  # as the broker stores it: the wrapper at its last inner offset
    source = FakeSource({KEY: stored_batch(0, 10) + damaged(bytes(legacy))})
    target = FakeTarget()
    corrupt = "corrupt record batch on the source at orders-0 offset 10"
    until = _healed_once_waiting(source, target, 10, corrupt, stored_batch(0, 10) + bytes(legacy), 20)
    assert run_task(batch_spec(blocked_retry_s=0), source, target, until).error is None
    assert target.waited_at(10, corrupt), "waited before the wrapper's first record"
    assert target.keys() == keys(0, 20), "its retry read the wrapper again: nothing skipped"


# -- a source log that changes under the copy ---------------------------------------------------------------------
def _with_epoch(raw: bytes, epoch: int) -> bytes:
    out = bytearray(raw)
    struct.pack_into(">i", out, 12, epoch)  # the partition leader epoch the source's leader stamped
    return bytes(out)


def _new(base: int, count: int) -> bytes:
    """Records a new leader wrote under epoch 1 at [base, base + count): value `new`."""
    return stored(base, [(b"new", [])] * count, leader_epoch=1)


def _copied_through_an_election(log: bytes, epoch_0_ends: int, end: int) -> tuple[FakeSource, FakeTarget]:
    """A whole task copying 100 records read under leader epoch 0; once the target holds them, a new leader (epoch 1)
    holds `log`, where epoch 0 ends at `epoch_0_ends`. Handed over once the target holds `end` records."""
    source = FakeSource({KEY: _with_epoch(stored_batch(0, 100), 0)})
    source.epochs[KEY] = 0
    target = FakeTarget()

    def elected_once_copied() -> bool:
        if len(target.keys()) == 100 and source.epoch(KEY) == 0:
            source.elect(KEY, 1, log, {0: epoch_0_ends})
        return len(target.keys()) >= end

    assert run_task(batch_spec(), source, target, elected_once_copied).error is None
    return source, target


def test_a_log_truncated_under_the_position_is_copied_again_from_where_it_diverged() -> None:
    """An unclean election: epoch 0 now ends at 40, and the new leader wrote 100 records from there. What the new
    log holds from 40 on is copied, once; the reset is reported; nothing read before the truncation is copied twice."""
    source, target = _copied_through_an_election(_with_epoch(stored_batch(0, 40), 0) + _new(40, 100), 40, 200)
    assert source.epochs_asked == [0], "the new leader was asked where the epoch of what was read ends"
    copied = target.log(REMOTE, 0).records
    assert [(r.key, r.value) for r in copied[100:]] == [(key, b"new") for key in keys(40, 140)]
    assert [r.key for r in copied[:100]] == keys(0, 100)
    assert target.went_back(100, 40), "the reset is reported"
    assert target.progress()[-1].next_offset == 140


def test_a_new_leader_that_holds_everything_fetched_changes_nothing() -> None:
    source, target = _copied_through_an_election(_with_epoch(stored_batch(0, 100), 0) + _new(100, 20), 100, 120)
    assert source.epochs_asked == [0], "asked once: the position is on the new leader's log"
    assert target.keys() == keys(0, 120), "every record, once, in order"
    assert all(p.report is None or p.report.reset_from is None for p in target.progress())
    assert target.progress()[-1].next_offset == 120


def test_a_source_log_made_shorter_under_a_batch_copy_moves_the_progress_back_with_the_copy() -> None:
    """100 records copied; the topic is made again with 30 (no topic ids to tell): copying goes on at the log
    start, and the position a commit writes goes back with it, so a restart before the new log passes 100 does not
    skip its records."""
    source = FakeSource({KEY: stored_batch(0, 100)})
    target = FakeTarget()

    def made_again_once_committed() -> bool:
        if any(p.next_offset == 100 for p in target.progress()) and source.log_of(KEY).end == 100:
            source.put(KEY, stored_batch(0, 30))
        return len(target.keys()) >= 130

    assert run_task(batch_spec(), source, target, made_again_once_committed).error is None
    assert target.keys()[100:] == keys(0, 30), "the new log, once, in order"
    assert target.progress()[-1].next_offset == 30
    assert target.went_back(100, 0), "the reset is reported"


@pytest.mark.asyncio
async def test_partitions_one_fetch_finds_out_of_range_are_looked_up_together_and_their_skips_counted() -> None:
    """Retention passing a lagging mirror: three partitions of one fetch are out of range; one bounds look-up
    (it blocks the loop) answers for all, each goes on at its log start and counts what it skipped."""
    source = FakeSource()
    for p in range(3):
        source.put(("orders", p), stored_batch(50 + p, 40 - p), start=50 + p)
    target = FakeTarget()
    copier = await open_copier(batch_spec(3), source, target, at=10)
    await steps_until(copier, lambda: all(len(target.keys(p)) == 40 - p for p in range(3)), 200)
    assert [sorted(asked) for asked in source.bounds_asked] == [sorted(copier.parts)], "one look-up for the three"
    assert [target.keys(p) for p in range(3)] == [keys(50 + p, 90) for p in range(3)]
    assert [copier.parts[("orders", p)].report().expired for p in range(3)] == [40, 41, 42]
    await copier.close()


# -- progress through the copy's own producer ---------------------------------------------------------------------
@pytest.mark.asyncio
async def test_progress_goes_out_through_the_batch_producer_and_its_refusal_reaches_the_loop() -> None:
    """A batch-forwarding task has one client for the target: its progress records are batches of one record
    of its own producer, and one the target refuses fails the task's next commit instead of passing unnoticed."""
    target = FakeTarget()
    copier = await open_copier(batch_spec(), FakeSource(), target)
    failures: list[str] = []
    copier.write_progress(b"progress-key", b"progress-value", failures.append)
    await copier.settle(wait=True)
    assert target.log(PROGRESS, 0).keys == [b"progress-key"]
    assert failures == []

    target.log(PROGRESS, 0).script.append(TOPIC_AUTHORIZATION_FAILED)
    copier.write_progress(b"second-key", b"second-value", failures.append)
    await copier.settle(wait=True)
    assert target.log(PROGRESS, 0).keys == [b"progress-key"]
    assert len(failures) == 1
    assert "TOPIC_AUTHORIZATION_FAILED" in failures[0]
    await copier.close()


@pytest.mark.asyncio
async def test_a_commit_of_thousands_of_partitions_writes_its_progress_in_a_few_requests() -> None:
    """One partition takes one batch per request: progress as a batch per record went out a few records per
    round trip, and a commit of thousands of partitions fell behind for good. A commit's records go together."""
    target = FakeTarget()
    copier = await open_copier(batch_spec(), FakeSource(), target)
    written = [f"progress-{index:05d}".encode() for index in range(3_000)]
    for key in written:
        copier.write_progress(key, bytes(100), lambda _error: None)
    await copier.settle(wait=True)
    assert target.log(PROGRESS, 0).keys == written, "every progress record, once, in order"
    assert target.produced <= 4, f"{target.produced} Produce requests for one commit"
    await copier.close()


def test_a_hand_over_ends_with_the_final_progress_acknowledged_and_the_link_closed() -> None:
    """No commit falls due before the hand-over: the final one writes the partition's only progress record, and
    the task returns once the target acknowledged it."""
    source, target = FakeSource(), FakeTarget()
    began = time.monotonic()
    result = run_task(batch_spec(commit_interval_ms=60_000), source, target, lambda: time.monotonic() > began + 0.1)
    assert result.error is None
    assert ProgressKey("A->B", "orders", 0).encode() in target.log(PROGRESS, 0).keys, "the progress reached the target"
    assert source.closed
    assert target.closed


def test_a_progress_record_the_target_refuses_fails_the_task_at_its_next_commit() -> None:
    source, target = FakeSource(), FakeTarget()
    target.log(PROGRESS, 0).script.append(TOPIC_AUTHORIZATION_FAILED)
    began = time.monotonic()
    result = run_task(batch_spec(), source, target, lambda: time.monotonic() > began + 1.0)
    assert result.error is not None
    assert "progress not written" in result.error
    assert "TOPIC_AUTHORIZATION_FAILED" in result.error
    assert source.closed
    assert target.closed


# -- which partitions a fetch names, and how much it may bring ---------------------------------------------------
def _every_partition(partitions: int, **source: Any) -> FakeSource:
    """A source whose partitions 0..`partitions`-1 of "orders" each hold records 0..9."""
    return FakeSource({("orders", p): stored_batch(0, 10) for p in range(partitions)}, **source)


def _named(source: FakeSource) -> list[set[tuple[str, int]]]:
    """The partitions each fetch named, in order."""
    return [set(fetch.positions) for fetch in source.fetches]


@pytest.mark.asyncio
async def test_a_partition_the_target_has_not_created_yet_is_not_fetched_while_the_others_copy() -> None:
    """A fresh mirror of thousands of partitions: the target creates them one by one over tens of seconds. Data
    fetched for a partition it has not created would sit in the byte bound and leave no room for those it has;
    such a partition is asked for (ListOffsets) and fetched only once its leader serves it."""
    target = FakeTarget(missing={(REMOTE, 0)})
    source = _every_partition(2)
    copier = await open_copier(batch_spec(2), source, target)

    await steps_until(copier, lambda: target.keys(1) == keys(0, 10), 200)
    assert target.keys(1) == keys(0, 10), "the created partition copies while the other waits"
    assert all(("orders", 0) not in named for named in _named(source)), "nothing fetched for the missing one"
    assert target.keys(0) == []

    target.create((REMOTE, 0))
    await steps_until(copier, lambda: target.keys(0) == keys(0, 10), 200)
    assert target.keys(0) == keys(0, 10), "copied once its leader serves it, every record once, in order"
    assert target.keys(1) == keys(0, 10)
    await copier.close()


@pytest.mark.asyncio
async def test_a_distant_source_leader_is_fetched_in_several_sessions_at_once_over_disjoint_partitions() -> None:
    """One fetch per leader per round trip caps each partition at max.partition.fetch.bytes per round trip: a
    leader whose round trip makes three lanes gets three fetches at a time, each for its own partitions."""
    target = FakeTarget()
    source = _every_partition(6, round_trip_s=0.05, lanes=3)
    copier = await open_copier(batch_spec(6), source, target)

    await steps_until(copier, lambda: all(target.keys(p) == keys(0, 10) for p in range(6)), 200)
    assert all(target.keys(p) == keys(0, 10) for p in range(6))
    assert source.most_in_flight == 3
    assert {fetch.lane for fetch in source.fetches} == {0, 1, 2}
    lanes: dict[int, set[tuple[str, int]]] = {}
    for fetch in source.fetches:
        lanes.setdefault(fetch.lane, set()).update(fetch.positions)
    assert [len(partitions) for partitions in lanes.values()] == [2, 2, 2]  # each partition in one lane only
    assert set().union(*lanes.values()) == {("orders", p) for p in range(6)}
    await copier.close()


@pytest.mark.asyncio
@pytest.mark.parametrize("buffer_memory", [None, DEFAULT_BUFFER_BYTES])
async def test_a_distant_leader_may_have_one_byte_bound_under_way_per_lane_unless_the_flow_sets_buffer_memory(
    buffer_memory: int | None,
) -> None:
    """Data from a far leader spends a round trip on the link before it is held: with one 32 MiB bound for four
    lanes each fetch waited for room and the copy at 150 ms ran at half its near rate. Unset, the bound is the
    default once per lane; a buffer.memory the user set is kept whatever the distance."""
    target = FakeTarget()
    source = _every_partition(8, round_trip_s=0.05, lanes=4)
    producer_props = {} if buffer_memory is None else {"buffer.memory": str(buffer_memory)}
    copier = await open_copier(batch_spec(8, target_producer=producer_props), source, target)

    await steps_until(copier, lambda: all(target.keys(p) == keys(0, 10) for p in range(8)), 200)
    assert all(target.keys(p) == keys(0, 10) for p in range(8))
    assert source.most_in_flight == 4
    bound = 4 * DEFAULT_BUFFER_BYTES if buffer_memory is None else buffer_memory
    assert source.most_bytes_asked <= bound, "the fetches under way never bring more than the bound"
    assert source.most_bytes_asked > bound - DEFAULT_BUFFER_BYTES // 4, "and may bring nearly all of it"
    await copier.close()


@pytest.mark.asyncio
async def test_a_task_whose_leaders_are_near_keeps_one_bound_though_another_source_broker_is_far() -> None:
    target = FakeTarget()
    source = _every_partition(4, round_trip_s=0.01)
    source.lanes_of[2] = 4  # broker 2 is far; the task's partitions are all led by near broker 1
    copier = await open_copier(batch_spec(4), source, target)

    await steps_until(copier, lambda: all(target.keys(p) == keys(0, 10) for p in range(4)), 200)
    assert all(target.keys(p) == keys(0, 10) for p in range(4))
    assert source.most_bytes_asked <= DEFAULT_BUFFER_BYTES // 4, "a near leader's fetch: a quarter of one bound"
    await copier.close()


@pytest.mark.asyncio
async def test_a_round_weighs_only_the_partitions_something_happened_to_and_keeps_the_quiet_ones_fetched(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A task of 2,000 partitions, one of them busy: each round looks again at the partitions that were answered,
    landed, held or released, not at every one (a fetch per round trip would cost 2,000 look-ups, most of a core
    at thousands of partitions); the quiet partitions stay in every fetch, a held one leaves it until released."""
    monkeypatch.setattr(fetch_lanes, "LOOK_AGAIN_S", math.inf)  # no periodic look at every partition
    partitions = 2000
    busy, held = ("orders", 0), ("orders", 5)
    target = FakeTarget()
    source = FakeSource({busy: stored_batch(0, 10)})
    copier = await open_copier(batch_spec(partitions), source, target)
    assert copier.link is not None
    producer = copier.link.producer
    looked_at: list[tuple[str, int]] = []
    in_flight = producer.in_flight

    def counted(key: tuple[str, int]) -> int:
        looked_at.append(key)
        return in_flight(key)

    monkeypatch.setattr(producer, "in_flight", counted)  # asked once for each partition a round looks at
    await steps_until(copier, lambda: target.keys(0) == keys(0, 10), 50)
    assert target.keys(0) == keys(0, 10), "the busy partition's records, once, in order"

    looked_at.clear()
    rounds = len(source.fetches)
    for _ in range(5):
        await copier.step()
    assert len(source.fetches) > rounds
    assert len(looked_at) <= 5 * 2, f"{len(looked_at)} partitions looked at in 5 rounds"
    assert all(len(named) == partitions for named in _named(source)[rounds:]), "the quiet partitions stay fetched"

    copier.hold(copier.parts[held])
    await copier.step()
    await copier.step()
    assert held not in _named(source)[-1]
    copier.release(copier.parts[held], 0)
    await copier.step()
    await copier.step()
    assert held in _named(source)[-1]
    assert len(_named(source)[-1]) == partitions
    await copier.close()


@pytest.mark.asyncio
async def test_fetches_wait_long_on_a_quiet_source_and_briefly_while_a_partition_waits_to_be_fetched() -> None:
    """With every partition in the fetch, nothing waits for it to answer: it may wait as long as Kafka's consumers
    do (an idle source answers a fifth of the fetches). A held partition is fetched again only after a fetch
    answers: while one is held, the fetches wait briefly."""
    busy, held = ("orders", 0), ("orders", 3)
    target = FakeTarget()
    source = FakeSource({busy: stored_batch(0, 10)})
    copier = await open_copier(batch_spec(8), source, target)
    await steps_until(copier, lambda: target.keys(0) == keys(0, 10), 50)
    assert target.keys(0) == keys(0, 10)
    for _ in range(3):
        await copier.step()
    assert source.fetches[-1].long_poll, "a quiet source with every partition fetched: a long poll"

    copier.hold(copier.parts[held])
    await copier.step()
    await copier.step()
    assert held not in source.fetches[-1].positions
    assert not source.fetches[-1].long_poll, "a held partition waits for the fetch under way: a short one"

    copier.release(copier.parts[held], 0)
    await copier.step()
    await copier.step()
    assert held in source.fetches[-1].positions
    assert source.fetches[-1].long_poll
    await copier.close()
