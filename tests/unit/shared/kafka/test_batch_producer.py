"""The batch producer's idempotence bookkeeping, against a client that answers as a broker would.

The fake client stands in for the connection only: it answers each Produce with the code the test scripts, and
otherwise as a broker with sequence checks does (a batch out of sequence is refused, a repeat of one of the last
five is answered with its first offset again), so the tests see what a broker would make of what was sent.
"""

from __future__ import annotations

import asyncio
import itertools
import struct
import time
from collections import deque
from typing import Any

import pytest
from aiokafka.protocol.offset import OffsetRequest
from aiokafka.record.default_records import DefaultRecordBatchBuilder

from shared.errors import KafkaOperationError
from shared.kafka.batch_producer import BatchProducer
from shared.kafka.error_codes import (
    MESSAGE_TOO_LARGE,
    NOT_LEADER_OR_FOLLOWER,
    OUT_OF_ORDER_SEQUENCE_NUMBER,
    UNKNOWN_SERVER_ERROR,
)
from shared.kafka.outgoing_batches import Landed, Outcome, OutgoingBatch, split_requests
from shared.kafka.record_batches import TargetBatch
from shared.retry import Backoff

TOPIC = "A.orders"
ACKED, REFUSED, DROPPED = Outcome.ACKNOWLEDGED, Outcome.REFUSED, Outcome.DROPPED


class _Cluster:
    def leader_for_partition(self, _tp: Any) -> int:
        return 1


class _Broker:
    """One partition's log with the broker's sequence check; `script` forces the answer to the next Produce."""

    def __init__(self) -> None:
        self.log: list[tuple[int, int]] = []  # (sequence, first offset) of each batch written
        self.next_offset = 0
        self.script: deque[int] = deque()
        self.probe_script: deque[int] = deque()  # answers to ListOffsets probes (0, ready, once it runs out)
        self.produced = 0  # Produce requests answered
        self.probes = 0  # ListOffsets requests answered
        self.probe_fails: Exception | None = None  # raised instead of answering a probe
        self._count = 0
        self.cluster = _Cluster()

    def answer(self, payload: TargetBatch) -> tuple[int, int]:
        sequence = struct.unpack_from(">i", payload.head, 53)[0]
        count = struct.unpack_from(">i", payload.head, 57)[0]
        if self.script:
            return self.script.popleft(), -1
        for written, first in self.log[-5:]:
            if written == sequence:
                return 0, first
        expected = self.log[-1][0] + self._count if self.log else 0
        if sequence != expected:
            return OUT_OF_ORDER_SEQUENCE_NUMBER, -1
        self.log.append((sequence, self.next_offset))
        self._count = count
        self.next_offset += count
        return 0, self.log[-1][1]

    async def send(self, _node: int, request: Any) -> Any:
        await asyncio.sleep(0)
        if isinstance(request, OffsetRequest):
            if self.probe_fails is not None:
                raise self.probe_fails
            self.probes += 1
            ((topic, [(partition, _latest)]),) = request._topics
            error = self.probe_script.popleft() if self.probe_script else 0
            return type("Response", (), {"topics": [(topic, [(partition, error, -1, self.next_offset)])]})()
        self.produced += 1
        ((topic, [(partition, payload)]),) = request._topics
        error, offset = self.answer(payload)
        return type("Response", (), {"topics": [(topic, [(partition, error, offset)])]})()

    def force_metadata_update(self) -> None:
        pass


def _batch(records: int, note: str) -> OutgoingBatch:
    builder = DefaultRecordBatchBuilder(2, 0, 0, -1, -1, -1, 1 << 20)
    for i in range(records):
        builder.append(i, 1_000, None, f"{note}-{i}".encode(), [])
    return OutgoingBatch((TOPIC, 0), TargetBatch.of(builder.build()), records, note)


async def _run(producer: BatchProducer, until: int) -> list[Landed]:
    landed: list[Landed] = []
    for _ in range(200):
        producer.pump()
        await asyncio.sleep(0.01)
        landed += producer.take_landed()
        if len(landed) >= until:
            break
    return landed


def _producer(broker: _Broker) -> BatchProducer:
    producer = BatchProducer(broker, request_timeout_ms=1_000, delivery_timeout_s=30)
    producer.producer_id, producer.producer_epoch = 7, 0
    return producer


async def _one_landed(records: int) -> tuple[_Broker, BatchProducer]:
    """A producer whose first batch of `records` records landed (so five may be in flight)."""
    broker = _Broker()
    producer = _producer(broker)
    producer.send(_batch(records, "first"))
    assert [x.outcome for x in await _run(producer, 1)] == [ACKED]
    return broker, producer


@pytest.mark.asyncio
async def test_batches_land_in_order_with_running_sequences() -> None:
    broker = _Broker()
    producer = _producer(broker)
    for note in "abcd":
        producer.send(_batch(3, note))
    landed = await _run(producer, 4)
    assert [(x.batch.note, x.base_offset, x.outcome) for x in landed] == [
        ("a", 0, ACKED),
        ("b", 3, ACKED),
        ("c", 6, ACKED),
        ("d", 9, ACKED),
    ]
    assert [sequence for sequence, _ in broker.log] == [0, 3, 6, 9]
    assert producer.idle()


@pytest.mark.asyncio
async def test_a_retriable_failure_sends_again_with_the_same_sequence_and_writes_nothing_twice() -> None:
    broker, producer = await _one_landed(2)
    broker.script.append(NOT_LEADER_OR_FOLLOWER)
    for note in "bc":
        producer.send(_batch(2, note))
    landed = await _run(producer, 2)
    assert [(x.batch.note, x.base_offset) for x in landed] == [("b", 2), ("c", 4)]
    assert [sequence for sequence, _ in broker.log] == [0, 2, 4]


@pytest.mark.asyncio
async def test_a_refused_batch_is_reported_and_what_was_sent_after_it_is_dropped() -> None:
    broker, producer = await _one_landed(1)
    broker.script.append(MESSAGE_TOO_LARGE)
    for note in "xyz":
        producer.send(_batch(2, note))
    landed = await _run(producer, 3)
    assert [(x.batch.note, x.outcome, x.error) for x in landed] == [
        ("x", REFUSED, MESSAGE_TOO_LARGE),
        ("y", DROPPED, 0),
        ("z", DROPPED, 0),
    ]
    assert landed[0].message == "MESSAGE_SIZE_TOO_LARGE"
    producer.send(_batch(1, "late"))  # queued before the caller decided: dropped when it resumes
    assert [x.batch.note for x in await _run(producer, 0)] == []
    producer.resume((TOPIC, 0))
    producer.send(_batch(1, "again"))  # the caller sends the refused records again: the sequence continues
    late, again = await _run(producer, 2)
    assert (late.batch.note, late.outcome) == ("late", DROPPED)
    assert (again.batch.note, again.outcome, again.base_offset) == ("again", ACKED, 1)
    assert [sequence for sequence, _ in broker.log] == [0, 1]


@pytest.mark.asyncio
async def test_a_broker_answering_unknown_server_error_is_a_refusal_the_caller_sees_never_a_drop() -> None:
    """Kafka's UNKNOWN_SERVER_ERROR is code -1: it must reach the caller as a refusal naming the error, so the
    caller sends the records again (it was once taken for the producer's own "dropped" marker and lost)."""
    broker, producer = await _one_landed(1)
    broker.script.append(UNKNOWN_SERVER_ERROR)
    producer.send(_batch(2, "x"))
    (refused,) = await _run(producer, 1)
    assert (refused.batch.note, refused.outcome, refused.error) == ("x", REFUSED, UNKNOWN_SERVER_ERROR)
    assert refused.message == "UNKNOWN_SERVER_ERROR"


def _sized(partition: int, size: int) -> OutgoingBatch:
    return OutgoingBatch((TOPIC, partition), TargetBatch.of(bytearray(size)), 1, None)


def test_produce_requests_are_split_at_the_request_size_keeping_every_batch_once_and_in_order() -> None:
    """24 partitions with 1 MiB batches for one leader: no request above the cap (one request of 24 MiB would
    exceed a broker's socket.request.max.bytes, which closes the connection instead of answering)."""
    batches = {(TOPIC, p): _sized(p, 1 << 20) for p in range(24)}
    requests = split_requests(batches, 8 << 20)
    assert all(sum(len(b.payload) for b in request.values()) <= 8 << 20 for request in requests)
    assert [key for request in requests for key in request] == list(batches)
    assert len(requests) == 4  # 7 batches of 1 MiB and their framing fit in 8 MiB


def test_a_batch_larger_than_the_cap_goes_alone() -> None:
    batches = {(TOPIC, 0): _sized(0, 100), (TOPIC, 1): _sized(1, 5000), (TOPIC, 2): _sized(2, 100)}
    requests = split_requests(batches, 2000)
    assert [list(request) for request in requests] == [[(TOPIC, 0)], [(TOPIC, 1)], [(TOPIC, 2)]]


@pytest.mark.asyncio
async def test_the_bytes_held_grow_with_every_batch_and_come_back_down_as_they_land_or_are_dropped() -> None:
    broker = _Broker()
    producer = BatchProducer(broker, request_timeout_ms=1_000, delivery_timeout_s=30, buffer_bytes=10_000)
    producer.producer_id, producer.producer_epoch = 7, 0
    batches = [_batch(3, note) for note in "ab"]
    for batch in batches:
        producer.send(batch)
    held = sum(len(batch.payload) for batch in batches)
    assert producer.buffered_bytes == held
    assert [x.outcome for x in await _run(producer, 2)] == [ACKED, ACKED]
    assert producer.buffered_bytes == 0

    broker.script.append(MESSAGE_TOO_LARGE)
    for note in "xy":
        producer.send(_batch(2, note))
    assert [x.outcome for x in await _run(producer, 2)] == [REFUSED, DROPPED]
    assert producer.buffered_bytes == 0, "a refused or dropped batch is no longer held"


class _SlowBroker:
    """Answers every partition of a Produce with success, but only when the test lets it (`gate`); counts the
    requests in flight at once, as a broker reading one request per connection at a time would see them queue."""

    def __init__(self) -> None:
        self.cluster = _Cluster()
        self.gate = asyncio.Event()
        self.in_flight = 0
        self.most_in_flight = 0
        self.written: list[tuple[int, int]] = []  # (partition, sequence) in the order requests were answered

    async def send(self, _node: int, request: Any) -> Any:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        await self.gate.wait()
        self.in_flight -= 1
        answers = []
        for topic, parts in request._topics:
            for partition, payload in parts:
                self.written.append((partition, struct.unpack_from(">i", payload.head, 53)[0]))
                answers.append((topic, [(partition, 0, len(self.written))]))
        return type("Response", (), {"topics": answers})()

    def force_metadata_update(self) -> None:
        pass


def _big_batch(partition: int, note: str) -> OutgoingBatch:
    builder = DefaultRecordBatchBuilder(2, 0, 0, -1, -1, -1, 1 << 20)
    builder.append(0, 1_000, None, bytes(300_000), [])
    return OutgoingBatch((TOPIC, partition), TargetBatch.of(builder.build()), 1, note)


@pytest.mark.asyncio
async def test_at_most_the_in_flight_request_limit_waits_on_a_broker_and_the_rest_follows_in_order() -> None:
    broker = _SlowBroker()
    producer = BatchProducer(
        broker,
        request_timeout_ms=1_000,
        delivery_timeout_s=30,
        max_request_bytes=1 << 20,
        max_in_flight_requests=2,
    )
    producer.producer_id, producer.producer_epoch = 7, 0
    for partition in range(12):
        for note in "ab":
            producer.send(_big_batch(partition, f"{partition}{note}"))
    for _ in range(20):  # the broker does not answer: nothing beyond two requests goes out
        producer.pump()
        await asyncio.sleep(0.001)
    assert broker.most_in_flight == 2
    assert len(broker.written) == 0
    broker.gate.set()
    landed = await _run(producer, 24)
    assert broker.most_in_flight == 2
    assert sorted(x.batch.note for x in landed) == sorted(f"{p}{n}" for p in range(12) for n in "ab")
    assert all(x.outcome is ACKED for x in landed)
    for partition in range(12):  # each partition's batches went out in order, with running sequences
        assert [seq for p, seq in broker.written if p == partition] == [0, 1]
    assert producer.idle()


@pytest.mark.asyncio
async def test_a_partition_failing_again_and_again_waits_longer_each_time_up_to_the_max_backoff() -> None:
    """A leader that keeps answering NOT_LEADER_OR_FOLLOWER (moving, or overloaded): the batch is sent again after
    retry.backoff.ms, doubling up to retry.backoff.max.ms (less 20% jitter at most), never at a fixed 100 ms."""
    broker = _Broker()
    attempts: list[float] = []
    answer = broker.answer

    def timed(payload: TargetBatch) -> tuple[int, int]:
        attempts.append(time.monotonic())
        return answer(payload)

    broker.answer = timed  # type: ignore[method-assign]
    producer = BatchProducer(
        broker, request_timeout_ms=1_000, delivery_timeout_s=30, retry_backoff=Backoff(first_s=0.05, max_s=0.2)
    )
    producer.producer_id, producer.producer_epoch = 7, 0
    producer.send(_batch(2, "first"))
    assert [x.outcome for x in await _run(producer, 1)] == [ACKED]
    attempts.clear()
    broker.script.extend([NOT_LEADER_OR_FOLLOWER] * 4)
    producer.send(_batch(2, "late"))
    landed = await _run(producer, 1)
    assert [(x.batch.note, x.base_offset, x.outcome) for x in landed] == [("late", 2, ACKED)]
    gaps = [later - earlier for earlier, later in itertools.pairwise(attempts)]
    assert len(gaps) == 4
    for gap, backoff in zip(gaps, [0.05, 0.1, 0.2, 0.2], strict=True):
        assert gap >= backoff * 0.8 - 0.005, f"sent again after {gap:.3f}s, the backoff was {backoff}s"


@pytest.mark.asyncio
async def test_a_new_partition_its_leader_has_not_taken_up_is_probed_until_ready_not_sent_its_batch_again() -> None:
    """A target creating thousands of partitions answers NOT_LEADER_OR_FOLLOWER for those it has not created yet: the
    batch is held and the partition asked with ListOffsets (a few bytes) until its leader answers, then sent once
    more."""
    broker = _Broker()
    producer = BatchProducer(
        broker, request_timeout_ms=1_000, delivery_timeout_s=30, retry_backoff=Backoff(first_s=0.01, max_s=0.02)
    )
    producer.producer_id, producer.producer_epoch = 7, 0
    broker.script.append(NOT_LEADER_OR_FOLLOWER)
    broker.probe_script.extend([NOT_LEADER_OR_FOLLOWER, NOT_LEADER_OR_FOLLOWER, 0])
    for note in "ab":
        producer.send(_batch(2, note))
    landed = await _run(producer, 2)
    assert [(x.batch.note, x.base_offset, x.outcome) for x in landed] == [("a", 0, ACKED), ("b", 2, ACKED)]
    assert broker.probes == 3
    assert broker.produced == 3, "a refused once, then a and b: the held batch was not sent while not ready"
    assert [sequence for sequence, _ in broker.log] == [0, 2]


@pytest.mark.asyncio
async def test_a_readiness_probe_that_breaks_stops_the_copy_with_its_error() -> None:
    broker = _Broker()
    producer = _producer(broker)
    broker.script.append(NOT_LEADER_OR_FOLLOWER)
    broker.probe_fails = ValueError("undecodable ListOffsets answer")
    producer.send(_batch(2, "a"))
    with pytest.raises(ValueError, match="undecodable"):
        await _run(producer, 1)


@pytest.mark.asyncio
async def test_a_prioritised_partition_goes_first_in_the_requests_however_much_data_waits() -> None:
    """A copy's progress must not wait behind a backlog of data: its partition is served first in each round,
    although its batch was queued after four large data batches that fill the requests."""
    broker = _SlowBroker()
    producer = BatchProducer(
        broker, request_timeout_ms=1_000, delivery_timeout_s=30, max_request_bytes=700_000, max_in_flight_requests=1
    )
    producer.producer_id, producer.producer_epoch = 7, 0
    progress = (TOPIC, 99)
    producer.prioritise(progress)
    for partition in range(4):
        producer.send(_big_batch(partition, f"data-{partition}"))
    producer.send(OutgoingBatch(progress, _batch(1, "progress").payload, 1, "progress"))
    producer.pump()
    await asyncio.sleep(0)
    broker.gate.set()
    await _run(producer, 5)
    assert broker.written[0][0] == 99, f"the first request carried {broker.written[:3]}"


@pytest.mark.asyncio
async def test_a_partition_met_for_the_first_time_is_ready_only_once_a_probe_finds_its_leader_serving_it() -> None:
    """Before a partition's data is fetched its target partition is asked for (one ListOffsets), so a target that
    has not created it yet holds none of the task's byte bound."""
    broker = _Broker()
    producer = BatchProducer(
        broker, request_timeout_ms=1_000, delivery_timeout_s=30, retry_backoff=Backoff(first_s=0.01, max_s=0.02)
    )
    key = (TOPIC, 0)
    broker.probe_script.extend([NOT_LEADER_OR_FOLLOWER, NOT_LEADER_OR_FOLLOWER])
    assert not producer.ready(key)
    for _ in range(100):
        producer.pump()
        await asyncio.sleep(0.01)
        if producer.ready(key):
            break
    assert producer.ready(key)
    assert broker.probes == 3, "asked until its leader answered"
    assert broker.produced == 0
    assert producer.buffered_bytes == 0


@pytest.mark.asyncio
async def test_a_partition_its_leader_never_takes_up_stops_the_copy_naming_it_after_the_delivery_timeout() -> None:
    broker = _Broker()
    producer = BatchProducer(
        broker, request_timeout_ms=1_000, delivery_timeout_s=0.1, retry_backoff=Backoff(first_s=0.01, max_s=0.02)
    )
    broker.probe_script.extend([NOT_LEADER_OR_FOLLOWER] * 1_000)
    assert not producer.ready((TOPIC, 3))

    async def pump_for_a_second() -> None:
        for _ in range(100):
            producer.pump()
            await asyncio.sleep(0.01)

    with pytest.raises(KafkaOperationError, match=r"A\.orders-3: its leader on the target has not taken it up"):
        await pump_for_a_second()
