"""Produce and consume helpers for tests; every wait has a deadline."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Message, TopicPartition

from shared.errors import AuthorizationError
from shared.kafka.errors import translate_kafka_error
from shared.kafka.factories import confluent_admin, confluent_consumer, confluent_producer
from shared.kafka.message_headers import message_headers
from shared.kafka.partition_reader import read_all_partitions
from shared.kafka.topics import create_topic
from shared.retry import Backoff, retry_blocking

Headers = list[tuple[str, bytes | None]]
ENDS_WITHIN_S = 60
COMMIT_WITHIN_S = 60


@dataclass(frozen=True)
class Rec:
    """A record as a test sees it."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: Headers
    timestamp_ms: int


def make_topic(props: Mapping[str, str], name: str, partitions: int = 1, **configs: str) -> None:
    """Create a topic (replication factor = broker default)."""
    create_topic(confluent_admin(props), name, partitions=partitions, configs=configs)


def delete_topic(props: Mapping[str, str], name: str, timeout_s: float = 180) -> None:
    """Delete a topic and return once the cluster no longer lists it. A request the cluster leaves unanswered (a
    CI machine's broker busy for a minute) is asked again with a new client rather than failing the test there."""
    deadline, last = time.monotonic() + timeout_s, "no answer"
    while time.monotonic() < deadline:
        admin = confluent_admin(props)
        if name not in admin.list_topics(timeout=30).topics:
            return
        try:
            admin.delete_topics([name], operation_timeout=30)[name].result(timeout=60)
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            if not isinstance(error, KafkaError) or error.code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
                last = str(exc)
        except TimeoutError:
            last = "the delete request was not answered within 60 s"
    raise AssertionError(f"topic {name} still listed after {timeout_s:.0f} s: {last}")


def produce(
    props: Mapping[str, str],
    topic: str,
    records: Sequence[tuple[bytes | None, bytes | None]],
    *,
    partition: int | None = None,
    headers: Headers | None = None,
    timestamp_ms: int | None = None,
    compression: str = "none",
    batch_bytes: int | None = None,
) -> None:
    """Produce and wait for every delivery; raises on the first failed delivery. `batch_bytes` caps the producer's
    batches (librdkafka's default makes batches of up to 1 MB)."""
    settings: dict[str, object] = {"enable.idempotence": True, "linger.ms": 5, "compression.type": compression}
    if batch_bytes is not None:
        settings["batch.size"] = batch_bytes
    producer = confluent_producer(props, **settings)
    errors: list[KafkaError] = []

    def on_delivery(err: KafkaError | None, _msg: object) -> None:
        if err is not None:
            errors.append(err)

    for key, value in records:
        kwargs: dict[str, object] = {"key": key, "value": value, "on_delivery": on_delivery}
        if partition is not None:
            kwargs["partition"] = partition
        if headers is not None:
            kwargs["headers"] = headers
        if timestamp_ms is not None:
            kwargs["timestamp"] = timestamp_ms
        producer.produce(topic, **kwargs)  # type: ignore[arg-type]
        producer.poll(0)
    remaining = producer.flush(30)
    assert remaining == 0, f"{remaining} records not delivered to {topic} within 30 s"
    assert not errors, f"delivery failed: {errors[0]}"


def _rec(msg: Message) -> Rec:
    return Rec(
        msg.partition() or 0,
        msg.offset() or 0,
        msg.key(),
        msg.value(),
        list(message_headers(msg) or []),
        msg.timestamp()[1],
    )


def consume_all(
    props: Mapping[str, str],
    topic: str,
    expected: int,
    *,
    timeout_s: float = 30,
    partitions: int | None = None,
    isolation_level: str = "read_uncommitted",
) -> list[Rec]:
    """Read `topic` from the beginning until `expected` records arrived or the deadline passed."""
    consumer: Consumer = confluent_consumer(
        props,
        **{"group.id": "test-reader", "enable.auto.commit": False, "isolation.level": isolation_level},
    )
    try:
        count = partitions or len(consumer.list_topics(topic, timeout=10).topics[topic].partitions)
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(count)])
        records: list[Rec] = []
        deadline = time.monotonic() + timeout_s
        while len(records) < expected and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=1000, timeout=0.5):
                if msg.error():
                    continue
                records.append(_rec(msg))
        return records
    finally:
        consumer.close()


def consume_to_end(
    props: Mapping[str, str], topic: str, *, isolation_level: str = "read_uncommitted", timeout_s: float = 120
) -> list[Rec]:
    """Every record up to each partition's end offset at call time, however long reading takes (within the
    timeout); transaction markers and aborted records are passed by position, not counted."""
    consumer: Consumer = confluent_consumer(
        props,
        **{"group.id": "test-reader", "enable.auto.commit": False, "isolation.level": isolation_level},
    )
    try:
        count = len(consumer.list_topics(topic, timeout=10).topics[topic].partitions)
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(count)}
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(count)])
        records: list[Rec] = []
        errors: list[str] = []  # the newest few, for the failure message
        deadline = time.monotonic() + timeout_s
        while True:
            for msg in consumer.consume(num_messages=1000, timeout=0.5):
                error = msg.error()
                if error is None:
                    records.append(_rec(msg))
                else:
                    errors = [*errors[-4:], f"{msg.partition()}@{msg.offset()}: {error}"]
            positions = consumer.position([TopicPartition(topic, p) for p in range(count)])
            behind = {tp.partition: tp.offset for tp in positions if max(tp.offset, 0) < ends[tp.partition]}
            if not behind:
                return records
            assert time.monotonic() < deadline, (
                f"{topic}: positions {behind} short of the ends {ends} in {timeout_s}s; last errors: {errors}"
            )
    finally:
        consumer.close()


def read_to_end(props: Mapping[str, str], topic: str, *, timeout_s: float = 60) -> list[Rec]:
    """Every record now in `topic` (all partitions, partition by partition), read up to the end offsets taken at the
    start by the production code's reader (`shared.kafka.partition_reader`, read_committed)."""
    return [
        Rec(partition, r.offset, r.key, r.value, list(r.headers), r.timestamp_ms)
        for partition, records in read_all_partitions(props, topic, timeout_s=timeout_s).items()
        for r in records
    ]


def end_offsets_sum(props: Mapping[str, str], topic: str, partitions: int) -> int:
    """The sum of the end offsets of `topic`'s first `partitions` partitions: how many records it has taken in."""
    return sum(end_offsets(props, topic, partitions))


def end_offsets(props: Mapping[str, str], topic: str, partitions: int | None = None) -> list[int]:
    """The end offsets of `topic`'s first `partitions` partitions (all when None), in partition order. Asked again
    for up to ENDS_WITHIN_S while the cluster settles: a new consumer may not know a partition yet ("Unknown
    partition" under load, seconds after the topic was made), and right after a broker fault a partition may be
    between leaders."""
    return retry_blocking(
        lambda: _end_offsets_once(props, topic, partitions),
        backoff=Backoff(0.5, 2.0),
        within_s=ENDS_WITHIN_S,
        retry_on=lambda exc: isinstance(exc, KafkaException),
    )


def _end_offsets_once(props: Mapping[str, str], topic: str, partitions: int | None) -> list[int]:
    consumer = confluent_consumer(props, **{"group.id": "test-ends"})
    try:
        count = partitions or len(consumer.list_topics(topic, timeout=10).topics[topic].partitions)
        return [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(count)]
    finally:
        consumer.close()


def commit_offsets(props: Mapping[str, str], group: str, offsets: Sequence[TopicPartition]) -> None:
    """Commit `offsets` for `group` from outside the group, as an application's consumer would after reading up
    to them (asked again while the group's coordinator moves or loads, see `commit_retrying`)."""
    consumer = confluent_consumer(props, **{"group.id": group, "enable.auto.commit": False})
    try:
        commit_retrying(consumer, list(offsets))
    finally:
        consumer.close()


def commit_retrying(consumer: Consumer, offsets: list[TopicPartition] | None = None) -> None:
    """`consumer.commit` (its positions when `offsets` is None), asked again for up to COMMIT_WITHIN_S while the
    answer is retriable. librdkafka does not retry a failed commit itself, and a broker answers "Not coordinator"
    or "Coordinator load in progress" for a moment while a group's coordinator is placed (a new cluster, a loaded
    machine), as Kafka's own clients wait out."""

    def once() -> None:
        if offsets is None:
            consumer.commit(asynchronous=False)
        else:
            consumer.commit(offsets=offsets, asynchronous=False)

    retry_blocking(
        once,
        backoff=Backoff(0.2, 2.0),
        within_s=COMMIT_WITHIN_S,
        retry_on=_retriable,
    )


def _retriable(exc: BaseException) -> bool:
    """A Kafka error its protocol marks worth another try (the coordinator codes librdkafka's results leave out);
    a missing permission is not, here: Strait's services wait for an operator, a test should fail at once."""
    if not isinstance(exc, KafkaException):
        return False
    error = translate_kafka_error(exc, operation="commit")
    return error.retriable and not isinstance(error, AuthorizationError)
