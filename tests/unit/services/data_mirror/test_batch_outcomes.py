"""Batch forwarding against a target that answers with errors: whatever the broker says, every record arrives
once, in order, and progress never passes a record the target did not write.

The task is driven step by step (forward a fetch, let the producer send, take the answers) with the real batch
producer in front of a broker stand-in that checks sequences as Kafka does (`test_batch_producer._Broker`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import struct
import time
from typing import Any

import pytest
from aiokafka.record.default_records import DefaultRecord, DefaultRecordBatch
from aiokafka.record.legacy_records import LegacyRecordBatchBuilder

from services.data_mirror.batch_copy import BatchCopier
from services.data_mirror.epoch_checks import Fetching
from services.data_mirror.partition_copy import Clock, PartitionCopy
from services.data_mirror.sync_rules import SyncTracker
from services.data_mirror.task_clients import TaskClients
from services.data_mirror.task_entry import task_loop
from services.data_mirror.task_loop import TaskLoop
from shared.kafka.batch_fetcher import PartitionFetch
from shared.kafka.batch_producer import DEFAULT_BUFFER_BYTES, BatchProducer
from shared.kafka.error_codes import (
    NOT_LEADER_OR_FOLLOWER,
    OFFSET_OUT_OF_RANGE,
    TOPIC_AUTHORIZATION_FAILED,
    UNKNOWN_SERVER_ERROR,
)
from shared.kafka.record_batches import TargetBatch
from shared.records.progress import ProgressKey
from shared.retry import Backoff
from tests.unit.services.data_mirror.test_copy_task import _spec
from tests.unit.shared.kafka.test_batch_producer import _Broker, _producer
from tests.unit.shared.kafka.test_record_batches import _batch as stored_batch

KEY = ("orders", 0)


class RecordingBroker(_Broker):
    """The broker stand-in, keeping the keys of the records it wrote (and the records), in log order."""

    def __init__(self) -> None:
        super().__init__()
        self.written: list[bytes | None] = []
        self.records: list[DefaultRecord] = []

    def answer(self, payload: TargetBatch) -> tuple[int, int]:
        before = len(self.log)
        error, offset = super().answer(payload)
        if error == 0 and len(self.log) > before:
            added = list(DefaultRecordBatch(bytes(payload)))
            self.records += added
            self.written += [record.key for record in added]
        return error, offset


@dataclasses.dataclass
class Link:
    producer: BatchProducer
    read_committed: bool = False


def _task(**changes: Any) -> tuple[BatchCopier, PartitionCopy, Fetching]:
    """A batch copier of partition 0 from position 0; `changes`: more of its TaskSpec (transforms, provenance)."""
    spec = dataclasses.replace(_spec(1), copy_batches=True, **changes)
    work = dataclasses.replace(spec.partitions[0], max_record_bytes=1_000_000)
    task = BatchCopier(dataclasses.replace(spec, partitions=(work,)), None, Clock(3600))  # type: ignore[arg-type]
    part = PartitionCopy(work, None, 0, SyncTracker(100), task.clock)
    part.position = 0
    task.assign({KEY: part})
    return task, part, task.fetching[KEY]


def _commit_positions(task: BatchCopier) -> None:
    """What the task loop's commit does to positions: settled partitions move to the fetch position, then each
    partition's position becomes the one its progress record writes."""
    loop = TaskLoop(task.spec, None, task, task.clock)  # type: ignore[arg-type]
    loop.parts = task.parts
    loop._advance_idle_positions(task.positions())
    for part in task.parts.values():
        part.position = part.next_position()


async def _copy(task: BatchCopier, part: PartitionCopy, fetching: Fetching, link: Any, stored: bytes, end: int) -> None:
    """Fetch (the same log) whenever the partition wants more, until the target acknowledged everything."""
    task.link = link
    for _ in range(500):
        if fetching.position < end and not part.paused:
            task._forward_batches(part, fetching, PartitionFetch(fetching.position, 0, end, end, 0, [], stored))
        link.producer.pump()
        await asyncio.sleep(0.005)
        task._take_landed()
        if part.acked == end - 1 and link.producer.idle():
            return


@pytest.mark.asyncio
async def test_a_batch_answered_with_unknown_server_error_is_sent_again_and_nothing_is_lost() -> None:
    stored = b"".join(stored_batch(base, 100) for base in range(0, 300, 100))
    broker = RecordingBroker()
    producer = _producer(broker)
    broker.script.append(UNKNOWN_SERVER_ERROR)  # the first Produce: the broker's error -1
    task, part, fetching = _task()
    await _copy(task, part, fetching, Link(producer), stored, 300)
    _commit_positions(task)
    assert broker.written == [f"k{offset}".encode() for offset in range(300)], "every record, once, in order"
    assert part.next_position() == 300
    assert part.refused_at is None


@pytest.mark.asyncio
async def test_progress_never_passes_records_the_target_refused_with_unknown_server_error() -> None:
    """A record the target keeps refusing with -1 stops its partition there: progress stays before it."""
    stored = stored_batch(0, 10)
    broker = RecordingBroker()
    producer = _producer(broker)
    broker.script.extend([UNKNOWN_SERVER_ERROR] * 2)  # the batch, then its first record sent on its own
    task, part, fetching = _task()
    await _copy(task, part, fetching, Link(producer), stored, 10)
    _commit_positions(task)
    assert broker.written == []
    assert part.refused_at == 0
    assert part.next_position() == 0
    assert part.failure is not None
    assert "UNKNOWN_SERVER_ERROR" in part.failure


class EpochFetcher:
    """The fetcher as the task sees it for leader epochs: the current epochs, and where the new leader says an
    epoch ends (`ends`)."""

    def __init__(self, epoch: int, ends: dict[int, int]) -> None:
        self.epochs = {KEY: epoch}
        self.ends = ends
        self.asked: list[int] = []

    def epoch(self, key: tuple[str, int]) -> int:
        return self.epochs[key]

    async def epoch_end(self, _key: tuple[str, int], epoch: int) -> tuple[int, int]:
        self.asked.append(epoch)
        return 0, self.ends[epoch]


@dataclasses.dataclass
class EpochLink:
    producer: BatchProducer
    fetcher: EpochFetcher
    read_committed: bool = False


def _with_epoch(raw: bytes, epoch: int) -> bytes:
    out = bytearray(raw)
    struct.pack_into(">i", out, 12, epoch)  # the partition leader epoch the source's leader stamped
    return bytes(out)


async def _copied_under_epoch_0(ends: dict[int, int]) -> tuple[BatchCopier, PartitionCopy, Fetching, EpochLink]:
    """100 records fetched under leader epoch 0 and acknowledged; then the leader epoch becomes 1."""
    stored = _with_epoch(stored_batch(0, 100), 0)
    link = EpochLink(_producer(RecordingBroker()), EpochFetcher(0, ends))
    task, part, fetching = _task()
    task.link = link  # type: ignore[assignment]
    assert task._epoch_checked(KEY)
    await _copy(task, part, fetching, link, stored, 100)
    assert (fetching.epoch, part.next_position()) == (0, 100)
    link.fetcher.epochs[KEY] = 1
    assert not task._epoch_checked(KEY), "a new leader epoch is checked before the next fetch"
    await asyncio.sleep(0.01)
    task._take_validations()
    task._rewind_diverged()
    return task, part, fetching, link


@pytest.mark.asyncio
async def test_a_log_truncated_under_the_position_is_copied_again_from_where_it_diverged() -> None:
    task, part, fetching, link = await _copied_under_epoch_0({0: 40})  # epoch 0 now ends at 40: 40..99 are gone
    assert link.fetcher.asked == [0]
    assert (fetching.position, part.next_position(), part.acked) == (40, 40, 39)
    assert not part.paused
    assert part.report().reset_from == 100
    assert task._epoch_checked(KEY)


@pytest.mark.asyncio
async def test_a_new_leader_that_holds_everything_fetched_changes_nothing() -> None:
    task, part, fetching, _ = await _copied_under_epoch_0({0: 100})
    assert (fetching.position, part.next_position(), fetching.validated) == (100, 100, 1)
    assert part.report().reset_from is None
    assert task._epoch_checked(KEY)


@pytest.mark.asyncio
async def test_progress_goes_out_through_the_batch_producer_and_its_refusal_reaches_the_loop() -> None:
    """A batch-forwarding task has one client for the target: its progress records are batches of one record
    of its own producer, and one the target refuses fails the task's next commit instead of passing unnoticed."""
    broker = RecordingBroker()
    task, _part, _fetching = _task()
    task.link = Link(_producer(broker))  # type: ignore[assignment]
    failures: list[str] = []
    task.write_progress(b"progress-key", b"progress-value", failures.append)
    await task.settle(wait=True)
    assert broker.written == [b"progress-key"]
    assert failures == []

    broker.script.append(TOPIC_AUTHORIZATION_FAILED)
    task.write_progress(b"second-key", b"second-value", failures.append)
    await task.settle(wait=True)
    assert broker.written == [b"progress-key"]
    assert len(failures) == 1
    assert "TOPIC_AUTHORIZATION_FAILED" in failures[0]


@pytest.mark.asyncio
async def test_partitions_one_fetch_finds_out_of_range_are_looked_up_together_and_their_skips_counted() -> None:
    """Retention passing a lagging mirror: three partitions of one fetch are out of range; one bounds look-up
    (it blocks the loop) answers for all, each goes on at its log start and counts what it skipped."""
    spec = _spec(3)
    asked: list[list[tuple[str, int]]] = []

    def bounds(keys: list[tuple[str, int]]) -> tuple[dict[tuple[str, int], int], dict[tuple[str, int], int]]:
        asked.append(keys)
        return {key: 50 + key[1] for key in keys}, {key: 90 for key in keys}

    clients = type("Clients", (), {"offset_bounds": staticmethod(bounds)})()
    task = BatchCopier(dataclasses.replace(spec, copy_batches=True), clients, Clock(3600))
    task.assign({work.key: PartitionCopy(work, None, 10, SyncTracker(100), task.clock) for work in spec.partitions})
    for part in task.parts.values():
        part.position = task.fetching[part.work.key].position = 10
    answers = {key: PartitionFetch(10, OFFSET_OUT_OF_RANGE, -1, -1, 0, [], b"") for key in task.parts}
    fetch: asyncio.Future[dict[tuple[str, int], PartitionFetch]] = asyncio.get_running_loop().create_future()
    fetch.set_result(answers)
    task._take_fetch(1, fetch)  # type: ignore[arg-type]
    assert len(asked) == 1
    assert sorted(asked[0]) == sorted(task.parts)
    assert [task.fetching[key].position for key in sorted(task.parts)] == [50, 51, 52]
    assert [task.parts[key].report().expired for key in sorted(task.parts)] == [40, 41, 42]


@pytest.mark.asyncio
async def test_a_commit_of_thousands_of_partitions_writes_its_progress_in_a_few_requests() -> None:
    """One partition takes one batch per request: progress as a batch per record went out a few records per
    round trip, and a commit of thousands of partitions fell behind for good. A commit's records go together."""
    broker = RecordingBroker()
    task, _part, _fetching = _task()
    task.link = Link(_producer(broker))  # type: ignore[assignment]
    keys = [f"progress-{index:05d}".encode() for index in range(3_000)]
    for key in keys:
        task.write_progress(key, bytes(100), lambda _error: None)
    await task.settle(wait=True)
    assert broker.written == keys, "every progress record, once, in order"
    assert broker.produced <= 4, f"{broker.produced} Produce requests for one commit"


class _QuietFetcher:
    """A source with nothing new: every fetch comes back empty after a moment."""

    lane_count = 1  # how many fetches the source leader takes at once (its distance)
    changes = 0  # the metadata never changes

    def leader(self, _key: tuple[str, int]) -> int:
        return 1

    def lanes(self, _node: int) -> int:
        return self.lane_count

    def epoch(self, _key: tuple[str, int]) -> int:
        return -1

    def knows(self, _topic: str) -> bool:
        return True

    async def fetch(
        self, _node: int, _positions: Any, _limit: int, _lane: int = 0, *, long_poll: bool = False
    ) -> dict[tuple[str, int], PartitionFetch]:
        await asyncio.sleep(0.01)
        return {}

    async def refresh(self) -> None:
        pass


@dataclasses.dataclass
class _LoopLink:
    producer: BatchProducer
    fetcher: _QuietFetcher
    read_committed: bool = False
    closed: bool = False

    async def close(self) -> None:
        self.closed = True


def _run_loop(broker: RecordingBroker, *, interval_ms: int, handover_after_s: float) -> tuple[str | None, _LoopLink]:
    """A whole batch-forwarding task (the task loop with its copier) over the broker stand-in, committing every
    `interval_ms`, until a hand-over requested `handover_after_s` after it starts."""
    spec = dataclasses.replace(_spec(1), copy_batches=True, commit_interval_ms=interval_ms)
    link = _LoopLink(_producer(broker), _QuietFetcher())
    deadline = time.monotonic() + handover_after_s

    async def open_link() -> _LoopLink:
        return link

    clients = TaskClients(
        consumer=None,
        producer=None,
        sync_producer=None,
        load_progress=dict,
        offset_bounds=lambda keys: (dict.fromkeys(keys, 0), dict.fromkeys(keys, 0)),
        handover_requested=lambda: time.monotonic() > deadline,
        close=lambda: None,
        open_batch_link=open_link,  # type: ignore[arg-type]
    )
    return task_loop(spec, clients).run().error, link


def test_a_hand_over_ends_with_the_final_progress_acknowledged_and_the_link_closed() -> None:
    """No commit falls due before the hand-over: the final one writes the partition's only progress record, and
    the task returns once the target acknowledged it."""
    broker = RecordingBroker()
    error, link = _run_loop(broker, interval_ms=60_000, handover_after_s=0.1)
    assert error is None
    assert ProgressKey("A->B", "orders", 0).encode() in broker.written, "the partition's progress reached the target"
    assert link.producer.idle(), "nothing the task sent is still unanswered"
    assert link.closed


def test_a_progress_record_the_target_refuses_fails_the_task_at_its_next_commit() -> None:
    broker = RecordingBroker()
    broker.script.append(TOPIC_AUTHORIZATION_FAILED)
    error, link = _run_loop(broker, interval_ms=50, handover_after_s=1.0)
    assert error is not None
    assert "progress not written" in error
    assert "TOPIC_AUTHORIZATION_FAILED" in error
    assert link.closed


class _TwoPartitionTarget(RecordingBroker):
    """A target whose partition 0 its leader has not created yet (every probe and Produce of it: NOT_LEADER)
    until `create()`; partition 1 takes batches. Requests may carry both partitions."""

    def __init__(self) -> None:
        super().__init__()
        self.created = {1}
        self.by_partition: dict[int, list[bytes | None]] = {0: [], 1: []}
        self.next_offsets = {0: 0, 1: 0}

    def create(self) -> None:
        self.created.add(0)

    async def send(self, _node: int, request: Any) -> Any:
        await asyncio.sleep(0)
        answers = []
        for topic, parts in request._topics:
            answered: list[tuple[int, ...]] = []
            for partition, payload in parts:
                if isinstance(payload, int):  # ListOffsets: (partition, timestamp)
                    self.probes += 1
                    error = 0 if partition in self.created else NOT_LEADER_OR_FOLLOWER
                    answered.append((partition, error, -1, self.next_offsets[partition]))
                elif partition not in self.created:
                    answered.append((partition, NOT_LEADER_OR_FOLLOWER, -1))
                else:
                    self.produced += 1
                    keys = [record.key for record in DefaultRecordBatch(bytes(payload))]
                    answered.append((partition, 0, self.next_offsets[partition]))
                    self.by_partition[partition] += keys
                    self.next_offsets[partition] += len(keys)
            answers.append((topic, answered))
        return type("Response", (), {"topics": answers})()


class _LogFetcher(_QuietFetcher):
    """A source holding `stored` (records 0..9) in each partition; remembers the partitions each fetch named."""

    def __init__(self, stored: bytes, round_trip_s: float = 0.001) -> None:
        self.stored = stored
        self.round_trip_s = round_trip_s
        self.asked: list[set[tuple[str, int]]] = []
        self.long_polls: list[bool] = []  # per fetch: whether it was asked to wait long
        self.lanes_asked: list[int] = []
        self.in_flight = self.most_in_flight = 0
        self.bytes_asked = self.most_bytes_asked = 0  # the fetches' size limits under way at once

    async def fetch(
        self, _node: int, positions: Any, limit: int, lane: int = 0, *, long_poll: bool = False
    ) -> dict[tuple[str, int], PartitionFetch]:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        self.bytes_asked += limit
        self.most_bytes_asked = max(self.most_bytes_asked, self.bytes_asked)
        await asyncio.sleep(self.round_trip_s)
        self.bytes_asked -= limit
        self.in_flight -= 1
        self.asked.append(set(positions))
        self.lanes_asked.append(lane)
        return {
            key: PartitionFetch(position, 0, 10, 10, 0, [], self.stored if position < 10 else b"")
            for key, position in positions.items()
        }


def _copier_between(
    fetcher: _LogFetcher, target: RecordingBroker, partitions: int, buffer_memory: int | None = None
) -> BatchCopier:
    """A batch copier of `partitions` partitions of "orders" from `fetcher`'s source to `target` (with the target
    producer's `buffer.memory` when given, Kafka's default when not)."""
    producer_props = {} if buffer_memory is None else {"buffer.memory": str(buffer_memory)}
    spec = dataclasses.replace(_spec(partitions), copy_batches=True, target_producer=producer_props)
    producer = BatchProducer(
        target,
        request_timeout_ms=1_000,
        delivery_timeout_s=30,
        retry_backoff=Backoff(first_s=0.01, max_s=0.02),
        buffer_bytes=DEFAULT_BUFFER_BYTES if buffer_memory is None else buffer_memory,
    )
    producer.producer_id, producer.producer_epoch = 7, 0
    task = BatchCopier(spec, None, Clock(3600))  # type: ignore[arg-type]
    task.link = _LoopLink(producer, fetcher)  # type: ignore[assignment]
    task.assign({work.key: PartitionCopy(work, None, 0, SyncTracker(100), task.clock) for work in spec.partitions})
    return task


async def _steps_until(task: BatchCopier, done: Any, rounds: int) -> None:
    """Step the copier until `done()` or `rounds` steps passed (the caller asserts what it waited for)."""
    for _ in range(rounds):
        await task.step()
        if done():
            return


@pytest.mark.asyncio
async def test_a_partition_the_target_has_not_created_yet_is_not_fetched_while_the_others_copy() -> None:
    """A fresh mirror of thousands of partitions: the target creates them one by one over tens of seconds. Data
    fetched for a partition it has not created would sit in the byte bound and leave no room for those it has;
    such a partition is asked for (ListOffsets) and fetched only once its leader serves it."""
    target = _TwoPartitionTarget()
    fetcher = _LogFetcher(stored_batch(0, 10))
    task = _copier_between(fetcher, target, partitions=2)
    keys = [f"k{offset}".encode() for offset in range(10)]

    await _steps_until(task, lambda: target.by_partition[1] == keys, 200)
    assert target.by_partition[1] == keys, "the created partition copies while the other waits"
    assert all(("orders", 0) not in asked for asked in fetcher.asked), "nothing fetched for the missing one"
    assert target.by_partition[0] == []

    target.create()
    await _steps_until(task, lambda: target.by_partition[0] == keys, 200)
    assert target.by_partition[0] == keys, "copied once its leader serves it, every record once, in order"
    assert target.by_partition[1] == keys


class _ManyPartitionTarget(_TwoPartitionTarget):
    """A target whose `partitions` partitions all take batches."""

    def __init__(self, partitions: int) -> None:
        super().__init__()
        self.created = set(range(partitions))
        self.by_partition = {p: [] for p in range(partitions)}
        self.next_offsets = dict.fromkeys(range(partitions), 0)


class _CreatedTarget(_ManyPartitionTarget):
    """A target whose partitions 0-5 all take batches."""

    def __init__(self) -> None:
        super().__init__(6)


@pytest.mark.asyncio
async def test_a_distant_source_leader_is_fetched_in_several_sessions_at_once_over_disjoint_partitions() -> None:
    """One fetch per leader per round trip caps each partition at max.partition.fetch.bytes per round trip: a
    leader whose round trip makes three lanes gets three fetches at a time, each for its own partitions."""
    target = _CreatedTarget()
    fetcher = _LogFetcher(stored_batch(0, 10), round_trip_s=0.05)
    fetcher.lane_count = 3
    task = _copier_between(fetcher, target, partitions=6)
    keys = [f"k{offset}".encode() for offset in range(10)]

    await _steps_until(task, lambda: all(target.by_partition[p] == keys for p in range(6)), 200)
    assert all(target.by_partition[p] == keys for p in range(6)), target.by_partition
    assert fetcher.most_in_flight == 3
    assert set(fetcher.lanes_asked) == {0, 1, 2}
    lanes: dict[int, set[tuple[str, int]]] = {}
    for lane, asked in zip(fetcher.lanes_asked, fetcher.asked, strict=True):
        lanes.setdefault(lane, set()).update(asked)
    assert [len(partitions) for partitions in lanes.values()] == [2, 2, 2]  # each partition in one lane only
    assert set().union(*lanes.values()) == {("orders", p) for p in range(6)}


@pytest.mark.asyncio
@pytest.mark.parametrize("buffer_memory", [None, DEFAULT_BUFFER_BYTES])
async def test_a_distant_leader_may_have_one_byte_bound_under_way_per_lane_unless_the_flow_sets_buffer_memory(
    buffer_memory: int | None,
) -> None:
    """Data from a far leader spends a round trip on the link before it is held: with one 32 MiB bound for four
    lanes each fetch waited for room and the copy at 150 ms ran at half its near rate. Unset, the bound is the
    default once per lane; a buffer.memory the user set is kept whatever the distance."""
    target = _ManyPartitionTarget(8)
    fetcher = _LogFetcher(stored_batch(0, 10), round_trip_s=0.05)
    fetcher.lane_count = 4
    task = _copier_between(fetcher, target, partitions=8, buffer_memory=buffer_memory)
    keys = [f"k{offset}".encode() for offset in range(10)]

    await _steps_until(task, lambda: all(target.by_partition[p] == keys for p in range(8)), 200)
    assert all(target.by_partition[p] == keys for p in range(8)), target.by_partition
    assert fetcher.most_in_flight == 4
    bound = 4 * DEFAULT_BUFFER_BYTES if buffer_memory is None else buffer_memory
    assert fetcher.most_bytes_asked <= bound, "the fetches under way never bring more than the bound"
    assert fetcher.most_bytes_asked > bound - DEFAULT_BUFFER_BYTES // 4, "and may bring nearly all of it"


class _NearLeadersFetcher(_LogFetcher):
    """A source whose broker 2 is far (four lanes) while the task's partitions are all led by near broker 1."""

    def lanes(self, node: int) -> int:
        return 4 if node == 2 else 1


@pytest.mark.asyncio
async def test_a_task_whose_leaders_are_near_keeps_one_bound_though_another_source_broker_is_far() -> None:
    target = _ManyPartitionTarget(4)
    fetcher = _NearLeadersFetcher(stored_batch(0, 10), round_trip_s=0.01)
    task = _copier_between(fetcher, target, partitions=4)
    keys = [f"k{offset}".encode() for offset in range(10)]

    await _steps_until(task, lambda: all(target.by_partition[p] == keys for p in range(4)), 200)
    assert all(target.by_partition[p] == keys for p in range(4)), target.by_partition
    assert fetcher.most_bytes_asked <= DEFAULT_BUFFER_BYTES // 4, "a near leader's fetch: a quarter of one bound"


class _SessionFetcher(_LogFetcher):
    """A fetch session over many partitions of which only `busy` has data: each answer names only the partitions
    with records, as an incremental fetch session's does."""

    def __init__(self, stored: bytes, busy: tuple[str, int]) -> None:
        super().__init__(stored)
        self.busy = busy

    async def fetch(
        self, _node: int, positions: Any, _limit: int, lane: int = 0, *, long_poll: bool = False
    ) -> dict[tuple[str, int], PartitionFetch]:
        await asyncio.sleep(self.round_trip_s)
        self.asked.append(set(positions))
        self.long_polls.append(long_poll)
        position = positions.get(self.busy)
        if position is None or position >= 10:
            return {}
        return {self.busy: PartitionFetch(position, 0, 10, 10, 0, [], self.stored)}


@pytest.mark.asyncio
async def test_a_round_weighs_only_the_partitions_something_happened_to_and_keeps_the_quiet_ones_fetched() -> None:
    """A task of 2,000 partitions, one of them busy: each round looks again at the partitions that were answered,
    landed, held or released, not at every one (a fetch per round trip would cost 2,000 look-ups, most of a core
    at thousands of partitions); the quiet partitions stay in every fetch, a held one leaves it until released."""
    partitions = 2000
    busy, held = ("orders", 0), ("orders", 5)
    target = _ManyPartitionTarget(partitions)
    fetcher = _SessionFetcher(stored_batch(0, 10), busy)
    task = _copier_between(fetcher, target, partitions)
    looked_at: list[tuple[str, int]] = []
    in_flight = task._link.producer.in_flight

    def counted(key: tuple[str, int]) -> int:
        looked_at.append(key)
        return in_flight(key)

    task._link.producer.in_flight = counted  # type: ignore[method-assign]
    keys = [f"k{offset}".encode() for offset in range(10)]
    await _steps_until(task, lambda: target.by_partition[0] == keys, 50)
    assert target.by_partition[0] == keys, "the busy partition's records, once, in order"

    task._lanes.next_full_look = float("inf")  # no periodic look during what follows
    looked_at.clear()
    rounds = len(fetcher.asked)
    for _ in range(5):
        await task.step()
    assert len(fetcher.asked) > rounds
    assert len(looked_at) <= 5 * 2, f"{len(looked_at)} partitions looked at in 5 rounds"
    assert all(len(asked) == partitions for asked in fetcher.asked[rounds:]), "the quiet partitions stay fetched"

    task.hold(task.parts[held])
    await task.step()
    await task.step()
    assert held not in fetcher.asked[-1]
    task.release(task.parts[held], 0)
    await task.step()
    await task.step()
    assert held in fetcher.asked[-1]
    assert len(fetcher.asked[-1]) == partitions


@pytest.mark.asyncio
async def test_fetches_wait_long_on_a_quiet_source_and_briefly_while_a_partition_waits_to_be_fetched() -> None:
    """With every partition in the fetch, nothing waits for it to answer: it may wait as long as Kafka's consumers
    do (an idle source answers a fifth of the fetches). A held partition is fetched again only after a fetch
    answers: while one is held, the fetches wait briefly."""
    busy, held = ("orders", 0), ("orders", 3)
    target = _ManyPartitionTarget(8)
    fetcher = _SessionFetcher(stored_batch(0, 10), busy)
    task = _copier_between(fetcher, target, 8)
    keys = [f"k{offset}".encode() for offset in range(10)]
    await _steps_until(task, lambda: target.by_partition[0] == keys, 50)
    assert target.by_partition[0] == keys
    for _ in range(3):
        await task.step()
    assert fetcher.long_polls[-1], "a quiet source with every partition fetched: a long poll"

    task.hold(task.parts[held])
    await task.step()
    await task.step()
    assert held not in fetcher.asked[-1]
    assert not fetcher.long_polls[-1], "a held partition waits for the fetch under way: a short one"

    task.release(task.parts[held], 0)
    await task.step()
    await task.step()
    assert held in fetcher.asked[-1]
    assert fetcher.long_polls[-1]


class _ShrinkingFetcher(_LogFetcher):
    """A source partition holding `stored` up to `end`; a fetch past `end` is answered OFFSET_OUT_OF_RANGE."""

    def __init__(self, stored: bytes, end: int) -> None:
        super().__init__(stored)
        self.end = end

    async def fetch(
        self, _node: int, positions: Any, _limit: int, _lane: int = 0, *, long_poll: bool = False
    ) -> dict[tuple[str, int], PartitionFetch]:
        await asyncio.sleep(0.001)
        end = self.end
        return {
            key: PartitionFetch(position, OFFSET_OUT_OF_RANGE, -1, -1, 0, [], b"")
            if position > end
            else PartitionFetch(position, 0, end, end, 0, [], self.stored if position < end else b"")
            for key, position in positions.items()
        }

    def offset_bounds(self, keys: list[tuple[str, int]]) -> tuple[dict[Any, int], dict[Any, int]]:
        return dict.fromkeys(keys, 0), dict.fromkeys(keys, self.end)


def _copier_of(fetcher: _LogFetcher, target: RecordingBroker) -> BatchCopier:
    """A batch copier of one partition whose target takes batches up to 1 MB (the source's batches go as they are)."""
    task = _copier_between(fetcher, target, partitions=1)
    part = task.parts[KEY]
    part.work = dataclasses.replace(part.work, max_record_bytes=1_000_000)
    return task


@pytest.mark.asyncio
async def test_a_source_log_made_shorter_under_a_batch_copy_moves_the_progress_back_with_the_copy() -> None:
    """100 records copied; the topic is made again with 30 (no topic ids to tell): copying goes on at the log
    start, and the position a commit writes goes back with it, so a restart before the new log passes 100 does not
    skip its records."""
    fetcher = _ShrinkingFetcher(stored_batch(0, 100), 100)
    target = RecordingBroker()
    task = _copier_of(fetcher, target)
    task.clients = fetcher  # type: ignore[assignment]
    part = task.parts[KEY]
    await _steps_until(task, lambda: part.acked == 99, 200)
    _commit_positions(task)
    assert part.next_position() == 100

    fetcher.stored, fetcher.end = stored_batch(0, 30), 30
    await _steps_until(task, lambda: len(target.written) == 130 and task._link.producer.idle(), 200)
    _commit_positions(task)
    assert target.written[100:] == [f"k{offset}".encode() for offset in range(30)], "the new log, once, in order"
    assert part.next_position() == 30
    assert part.report().reset_from == 100


def _damaged(raw: bytes) -> bytes:
    """`raw` with one bit of its last byte flipped: its checksum no longer matches."""
    out = bytearray(raw)
    out[-1] ^= 0x01
    return bytes(out)


async def _refused_behind_a_stop(
    stored: bytes, end: int, stop: Any, written: int
) -> tuple[BatchCopier, RecordingBroker]:
    """A batch copy of `stored` whose first Produce (the batch at 0, as it is) the target refuses with -1, while
    `stop(part)` has the partition stop further on; stepped until the target holds `written` records (or for long
    enough that it would have)."""
    fetcher = _ShrinkingFetcher(stored, end)
    target = RecordingBroker()
    target.script.append(UNKNOWN_SERVER_ERROR)
    task = _copier_of(fetcher, target)
    stop(task.parts[KEY])
    await _steps_until(task, lambda: len(target.written) >= written and task._link.producer.idle(), 1000)
    _commit_positions(task)
    return task, target


@pytest.mark.asyncio
async def test_a_batch_refused_as_a_whole_before_a_corrupt_one_is_sent_again_and_the_partition_waits_at_it() -> None:
    """The fetch brought a batch and a damaged one after it: the partition stopped at the damage when the target
    refused the first batch as a whole. That batch is sent again record by record; the partition then waits at the
    damaged batch and reads it again when its retry is due, instead of stalling before the refused batch for good."""
    stored = stored_batch(0, 100) + _damaged(stored_batch(100, 100))
    task, target = await _refused_behind_a_stop(stored, 200, lambda part: None, 100)
    part = task.parts[KEY]
    assert target.written == [f"k{offset}".encode() for offset in range(100)], "the refused batch, once, in order"
    assert (part.next_position(), part.refused_at) == (100, 100)
    task.clock.now_ms = part.retry_at_ms
    assert part.retry_due(), "the damaged batch is read again once its retry is due"


@pytest.mark.asyncio
async def test_a_batch_refused_as_a_whole_before_an_earlier_tasks_refusal_is_sent_again_up_to_it() -> None:
    """An earlier task stopped at 150 (its retry not due): the copy goes up to it and stops there, and the target
    then refuses the batch at 0 as a whole. It is sent again, and the partition waits at 150 again."""
    stored = stored_batch(0, 100) + stored_batch(100, 100)
    task, target = await _refused_behind_a_stop(
        stored, 200, lambda part: part.wait_at(150, "MESSAGE_TOO_LARGE", int(time.time() * 1000)), 150
    )
    part = task.parts[KEY]
    assert target.written == [f"k{offset}".encode() for offset in range(150)], "up to the refused record, once"
    assert (part.next_position(), part.refused_at) == (150, 150)
    task.clock.now_ms = part.retry_at_ms
    assert part.retry_due()


@pytest.mark.asyncio
async def test_a_corrupt_compressed_legacy_message_set_stops_its_partition_at_its_first_record() -> None:
    """A v1 wrapper holding offsets 10..19 (gzip) fails its CRC: its offset is its last inner record's, but the
    partition must wait before the first one, where its retry reads the wrapper again and nothing is skipped."""
    wrapper = LegacyRecordBatchBuilder(1, 1, 1 << 20)  # magic 1, gzip
    for index in range(10):
        wrapper.append(index, 1_000 + index, f"k{10 + index}".encode(), b"v" * 20)
    legacy = bytearray(wrapper.build())
    struct.pack_into(">q", legacy, 0, 19)  # as the broker stores it: the wrapper at its last inner offset
    stored = stored_batch(0, 10) + _damaged(bytes(legacy))
    fetcher = _ShrinkingFetcher(stored, 20)
    target = RecordingBroker()
    task = _copier_of(fetcher, target)
    part = task.parts[KEY]
    await _steps_until(task, lambda: part.acked == 9 and task._link.producer.idle(), 100)
    _commit_positions(task)
    assert target.written == [f"k{offset}".encode() for offset in range(10)]
    assert (part.next_position(), part.refused_at) == (10, 10)
    assert "corrupt record batch on the source at orders-0 offset 10" in (part.failure or "")
    task.clock.now_ms = part.retry_at_ms
    assert part.retry_due()
