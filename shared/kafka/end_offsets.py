"""How many records each topic holds so far (the sum of its partitions' end offsets), in one blocking call.

For command-line views (`strait demo`); services track positions per partition instead."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from confluent_kafka import IsolationLevel, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from shared.kafka.errors import translate_kafka_error
from shared.kafka.factories import confluent_admin, confluent_consumer


def partition_watermarks(
    props: Mapping[str, str], partitions: Mapping[str, int], *, timeout_s: float = 10
) -> dict[tuple[str, int], tuple[int, int]]:
    """(topic, partition) -> (log start offset, end offset) for partitions 0..count-1 of each topic."""
    consumer = confluent_consumer(props, **{"group.id": "strait-end-offsets", "enable.auto.commit": False})
    try:
        marks: dict[tuple[str, int], tuple[int, int]] = {}
        for topic, count in partitions.items():
            for partition in range(count):
                low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout_s)
                marks[(topic, partition)] = (int(low), int(high))
        return marks
    except KafkaException as exc:
        raise translate_kafka_error(exc, operation="list offsets", resource=",".join(partitions)) from exc
    finally:
        consumer.close()


def topic_end_offsets(
    props: Mapping[str, str], topics: Sequence[str], *, timeout_s: float = 10
) -> dict[str, int | None]:
    """topic -> sum of its partitions' end offsets; None for a topic that does not exist (yet)."""
    consumer = confluent_consumer(props, **{"group.id": "strait-end-offsets", "enable.auto.commit": False})
    try:
        metadata = consumer.list_topics(timeout=timeout_s)
        ends: dict[str, int | None] = {}
        for topic in topics:
            info = metadata.topics.get(topic)
            if info is None or info.error is not None or not info.partitions:
                ends[topic] = None
                continue
            ends[topic] = sum(
                consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout_s)[1]
                for partition in info.partitions
            )
        return ends
    except KafkaException as exc:
        raise translate_kafka_error(exc, operation="list end offsets", resource=",".join(topics)) from exc
    finally:
        consumer.close()


def committed_watermarks(
    admin_props: Mapping[str, str], partitions: Sequence[tuple[str, int]], *, timeout_s: float = 30
) -> dict[tuple[str, int], tuple[int, int]]:
    """(topic, partition) -> (log start, last stable offset) for many partitions in two batched requests per broker.

    The end is what a read_committed consumer can reach (an open transaction holds it back), so a reader that
    stops there never waits on a transaction.
    """
    if not partitions:
        return {}
    admin = confluent_admin(admin_props)
    wanted = [TopicPartition(topic, partition) for topic, partition in partitions]
    try:
        starts = _offsets(admin, wanted, OffsetSpec.earliest(), timeout_s)
        ends = _offsets(admin, wanted, OffsetSpec.latest(), timeout_s)
    except KafkaException as exc:
        raise translate_kafka_error(exc, operation="list offsets", resource=partitions[0][0]) from exc
    return {key: (starts[key], ends[key]) for key in starts}


def _offsets(
    admin: AdminClient, wanted: list[TopicPartition], spec: OffsetSpec, timeout_s: float
) -> dict[tuple[str, int], int]:
    futures = admin.list_offsets(
        {tp: spec for tp in wanted}, isolation_level=IsolationLevel.READ_COMMITTED, request_timeout=timeout_s
    )
    # ListOffsetsResultInfo has `offset` at run time; the package's stubs leave it out.
    return {(tp.topic, tp.partition): int(future.result().offset) for tp, future in futures.items()}  # type: ignore[attr-defined]
