"""PartitionReader and read_to_end over a stand-in consumer: end of partition is no error, a failed fetch is
named, a topic is read up to the end it had when the read began, and an absent topic reads as empty."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from shared.errors import KafkaOperationError
from shared.kafka import partition_reader
from shared.kafka.partition_reader import PartitionReader, read_to_end
from shared.retry import Backoff

TOPIC = "strait.control.internal"


@dataclass
class _Message:
    offset_: int
    value_: bytes | None = None
    key_: bytes | None = None
    error_: KafkaError | None = None
    partition_: int = 0

    def offset(self) -> int:
        return self.offset_

    def partition(self) -> int:
        return self.partition_

    def key(self) -> bytes | None:
        return self.key_

    def value(self) -> bytes | None:
        return self.value_

    def timestamp(self) -> tuple[int, int]:
        return (1, 1000 + self.offset_)

    def headers(self) -> None:
        return None

    def error(self) -> KafkaError | None:
        return self.error_


@dataclass
class _Topic:
    error: KafkaError | None = None


@dataclass
class _Partitioned(_Topic):
    partitions: list[int] = field(default_factory=lambda: [0])


@dataclass
class _Metadata:
    topics: dict[str, _Topic] = field(default_factory=dict)


@dataclass
class _Consumer:
    """Hands out `batches` one per consume; `end` is the partition's end offset, `exists` says if its topic does.

    Its position follows what it handed out; an empty batch moves it to `end` (past trailing transaction markers).
    """

    batches: list[list[_Message]] = field(default_factory=list)
    end: int = 0
    exists: bool = True
    at: int = 0
    closed: bool = False

    def assign(self, partitions: list[TopicPartition]) -> None:
        pass

    def consume(self, num_messages: int, timeout: float) -> list[_Message]:
        batch = self.batches.pop(0) if self.batches else []
        self.at = batch[-1].offset() + 1 if batch else self.end
        return batch

    def list_topics(self, topic: str, timeout: float) -> _Metadata:
        return _Metadata({topic: _Topic()} if self.exists else {})

    def get_watermark_offsets(self, partition: TopicPartition, timeout: float) -> tuple[int, int]:
        return (0, self.end)

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        return [TopicPartition(TOPIC, 0, self.at)]

    def close(self) -> None:
        self.closed = True


def _use(monkeypatch: pytest.MonkeyPatch, consumer: _Consumer) -> None:
    """`consumer` for every read; the batched look-up of bounds answers (0, its end) for each partition asked."""
    monkeypatch.setattr(partition_reader, "confluent_consumer", lambda props, **settings: consumer)
    monkeypatch.setattr(
        partition_reader,
        "listed_watermarks",
        lambda props, wanted, timeout_s: {(topic, partition): (0, consumer.end) for topic, partition in wanted},
    )


def test_end_of_partition_is_no_error_and_a_failed_fetch_is_named_until_a_clean_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    eof = _Message(0, error_=KafkaError(KafkaError._PARTITION_EOF))
    denied = _Message(-1, error_=KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED, "not allowed to read"))
    _use(monkeypatch, _Consumer(batches=[[_Message(0, b"one"), eof], [denied], []]))
    reader = PartitionReader({}, TOPIC, group_id="g", from_end=True)
    assert [r.value for r in reader.read()] == [b"one"]
    assert reader.read_error is None
    assert reader.read() == []
    assert reader.read_error is not None
    assert "TOPIC_AUTHORIZATION_FAILED" in reader.read_error
    assert TOPIC in reader.read_error
    reader.read()
    assert reader.read_error is None


def test_read_to_end_stops_at_the_end_seen_first_and_keeps_tombstones(monkeypatch: pytest.MonkeyPatch) -> None:
    log = [_Message(0, b"a", b"x"), _Message(1, None, b"x"), _Message(2, b"b", b"y")]
    later = _Message(3, b"late", b"z")
    consumer = _Consumer(batches=[log[:2], log[2:], [later]], end=3)
    _use(monkeypatch, consumer)
    records = read_to_end({}, TOPIC, group_id="g", timeout_s=5)
    assert [(r.offset, r.key, r.value) for r in records] == [(0, b"x", b"a"), (1, b"x", None), (2, b"y", b"b")]
    assert consumer.closed


def test_read_to_end_passes_transaction_markers_at_the_end(monkeypatch: pytest.MonkeyPatch) -> None:
    consumer = _Consumer(batches=[[_Message(0, b"a")], [], [_Message(5, b"late")]], end=2)  # offset 1: a marker
    _use(monkeypatch, consumer)
    assert [r.value for r in read_to_end({}, TOPIC, group_id="g", timeout_s=5)] == [b"a"]


@dataclass
class _ManyPartitions(_Consumer):
    """Fetched records arrive in `batches` across partitions; `waited` counts consume calls that would wait out their
    whole timeout (librdkafka's consume returns early only when the batch fills, so a wait for a batch of many
    costs the full timeout whenever fewer records than that remain). An empty batch moves every assigned partition
    to its end, as when only transaction markers remain."""

    ends: dict[int, int] = field(default_factory=dict)
    placed: dict[int, int] = field(default_factory=dict)
    assigned: list[int] = field(default_factory=list)
    waited: int = 0

    def assign(self, partitions: list[TopicPartition]) -> None:
        self.assigned = [tp.partition for tp in partitions]
        self.placed = {tp.partition: tp.offset for tp in partitions}

    def consume(self, num_messages: int, timeout: float) -> list[_Message]:
        if timeout > 0 and num_messages > 1:
            self.waited += 1
        batch = self.batches.pop(0) if self.batches else []
        for message in batch:
            self.placed[message.partition()] = message.offset() + 1
        if not batch:
            self.placed = {p: self.ends[p] for p in self.assigned}
        return batch[:num_messages] if num_messages < len(batch) else batch

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        return [TopicPartition(TOPIC, tp.partition, self.placed[tp.partition]) for tp in partitions]


def test_all_partitions_are_read_together_to_the_ends_they_had_without_waiting_on_queued_records(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """MM2's 25-partition offsets topic, read partition by partition with a wait per partition, took 15 s of a
    `strait migrate`; one fetch loop over every partition reads each to its own end."""
    ends = {0: 2, 1: 0, 2: 3}
    batches = [
        [_Message(0, b"p0-0", partition_=0), _Message(0, b"p2-0", partition_=2)],
        [_Message(1, b"p0-1", partition_=0), _Message(1, b"p2-1", partition_=2), _Message(2, b"p0-late", partition_=0)],
        [],  # partition 2's offset 2 is a transaction marker
        [_Message(3, b"p2-late", partition_=2)],
    ]
    consumer = _ManyPartitions(batches=batches, ends=ends)
    monkeypatch.setattr(partition_reader, "confluent_consumer", lambda props, **settings: consumer)
    monkeypatch.setattr(
        partition_reader,
        "listed_watermarks",
        lambda props, wanted, timeout_s: {(topic, p): (0, ends[p]) for topic, p in wanted},
    )
    monkeypatch.setattr(
        _Consumer, "list_topics", lambda self, topic, timeout: _Metadata({topic: _Partitioned(partitions=list(ends))})
    )
    read = partition_reader.read_all_partitions({}, TOPIC, timeout_s=5)
    assert {p: [r.value for r in records] for p, records in read.items()} == {
        0: [b"p0-0", b"p0-1"],
        1: [],
        2: [b"p2-0", b"p2-1"],
    }
    assert consumer.assigned == [0, 2]  # an empty partition is not fetched at all
    assert consumer.waited == 0
    assert consumer.closed


def test_read_to_end_of_an_absent_topic_is_empty(monkeypatch: pytest.MonkeyPatch) -> None:
    consumer = _Consumer(exists=False)
    _use(monkeypatch, consumer)
    assert read_to_end({}, TOPIC, group_id="g", timeout_s=1) == []
    assert consumer.closed


@dataclass
class _StuckConsumer(_Consumer):
    """A partition whose fetches keep failing: nothing comes back and the position never moves."""

    def consume(self, num_messages: int, timeout: float) -> list[_Message]:
        return [_Message(-1, error_=KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED, "not allowed to read"))]


def test_a_read_that_must_reach_the_end_raises_at_the_deadline_naming_where_it_got_and_why() -> None:
    consumer = _StuckConsumer(end=10)
    with pytest.raises(
        TimeoutError, match=rf"did not reach .* in time \({TOPIC}-0 at 0 of 10\).*TOPIC_AUTHORIZATION_FAILED"
    ):
        list(partition_reader.read_range(consumer, TOPIC, 0, 0, 10, time.monotonic() + 0.2))


def test_a_view_of_current_state_returns_what_it_has_at_the_deadline() -> None:
    consumer = _StuckConsumer(end=10)
    assert list(partition_reader.read_range(consumer, TOPIC, 0, 0, 10, time.monotonic() + 0.2, complete=False)) == []


@dataclass
class _NewTopicConsumer(_Consumer):
    """A broker that has not yet learned of a topic just created: its first answers are 'unknown topic'."""

    unknown_answers: int = 2

    def get_watermark_offsets(self, partition: TopicPartition, timeout: float) -> tuple[int, int]:
        if self.unknown_answers:
            self.unknown_answers -= 1
            raise KafkaException(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART, "Broker: Unknown topic or partition"))
        return (0, self.end)


def test_a_topic_just_created_that_a_broker_does_not_know_yet_is_asked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Right after an internal topic is created, a broker may answer 'unknown topic' until the controller's metadata
    reaches it (the soak's data-mirror crashed at start on it): the reader asks again within its timeout."""
    monkeypatch.setattr(partition_reader, "NEW_TOPIC_BACKOFF", Backoff(first_s=0.01))
    consumer = _NewTopicConsumer(end=3)
    _use(monkeypatch, consumer)
    assert PartitionReader({}, TOPIC, group_id="g").bounds(timeout_s=5) == (0, 3)
    assert consumer.unknown_answers == 0


def test_a_topic_that_stays_unknown_fails_after_the_grace_not_the_whole_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A reader of a topic nobody made yet (the audit before data-mirror's first start) is told so soon."""
    monkeypatch.setattr(partition_reader, "NEW_TOPIC_BACKOFF", Backoff(first_s=0.01))
    monkeypatch.setattr(partition_reader, "NEW_TOPIC_GRACE_S", 0.1)
    _use(monkeypatch, _NewTopicConsumer(unknown_answers=10**6))
    began = time.monotonic()
    with pytest.raises(KafkaOperationError, match="UNKNOWN_TOPIC_OR_PART"):
        PartitionReader({}, TOPIC, group_id="g").bounds(timeout_s=30)
    assert time.monotonic() - began < 10
