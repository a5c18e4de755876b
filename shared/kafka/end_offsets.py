"""Where partitions start and end, for many partitions at once: batched ListOffsets requests (two per broker), never
one look-up per partition. For command-line views and checks (`strait demo`, `strait migrate`, verify, the audit);
copy tasks track their own positions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from confluent_kafka import IsolationLevel, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from shared.kafka.errors import translate_kafka_error
from shared.kafka.factories import confluent_admin


def partition_watermarks(
    admin_props: Mapping[str, str], partitions: Mapping[str, int], *, timeout_s: float = 10
) -> dict[tuple[str, int], tuple[int, int]]:
    """(topic, partition) -> (log start offset, high watermark) for partitions 0..count-1 of each topic, in two
    batched requests per broker (one look-up per partition would be thousands of round trips)."""
    wanted = [(topic, partition) for topic, count in partitions.items() for partition in range(count)]
    return listed_watermarks(admin_props, wanted, timeout_s=timeout_s)


def listed_watermarks(
    admin_props: Mapping[str, str], partitions: Sequence[tuple[str, int]], *, timeout_s: float = 10
) -> dict[tuple[str, int], tuple[int, int]]:
    """(topic, partition) -> (log start offset, high watermark) for the partitions named, in two batched requests
    per broker."""
    return _watermarks(admin_props, partitions, IsolationLevel.READ_UNCOMMITTED, timeout_s)


def topic_end_offsets(
    props: Mapping[str, str], topics: Sequence[str], *, timeout_s: float = 10
) -> dict[str, int | None]:
    """topic -> sum of its partitions' end offsets; None for a topic that does not exist (yet)."""
    admin = confluent_admin(props)
    try:
        metadata = admin.list_topics(timeout=timeout_s)
    except KafkaException as exc:
        raise translate_kafka_error(exc, operation="list end offsets", resource=",".join(topics)) from exc
    counts: dict[str, int] = {}
    for topic in topics:
        info = metadata.topics.get(topic)
        if info is not None and info.error is None and info.partitions:
            counts[topic] = len(info.partitions)
    marks = partition_watermarks(props, counts, timeout_s=timeout_s) if counts else {}
    ends: dict[str, int | None] = dict.fromkeys(topics)
    for (topic, _partition), (_start, end) in marks.items():
        ends[topic] = (ends[topic] or 0) + end
    return ends


def committed_watermarks(
    admin_props: Mapping[str, str], partitions: Sequence[tuple[str, int]], *, timeout_s: float = 30
) -> dict[tuple[str, int], tuple[int, int]]:
    """(topic, partition) -> (log start, last stable offset) for many partitions in two batched requests per broker.

    The end is what a read_committed consumer can reach (an open transaction holds it back), so a reader that
    stops there never waits on a transaction.
    """
    return _watermarks(admin_props, partitions, IsolationLevel.READ_COMMITTED, timeout_s)


def _watermarks(
    admin_props: Mapping[str, str],
    partitions: Sequence[tuple[str, int]],
    isolation: IsolationLevel,
    timeout_s: float,
) -> dict[tuple[str, int], tuple[int, int]]:
    if not partitions:
        return {}
    admin = confluent_admin(admin_props)
    wanted = [TopicPartition(topic, partition) for topic, partition in partitions]
    try:
        starts = _offsets(admin, wanted, OffsetSpec.earliest(), isolation, timeout_s)
        ends = _offsets(admin, wanted, OffsetSpec.latest(), isolation, timeout_s)
    except KafkaException as exc:
        raise translate_kafka_error(exc, operation="list offsets", resource=partitions[0][0]) from exc
    return {key: (starts[key], ends[key]) for key in starts}


def _offsets(
    admin: AdminClient, wanted: list[TopicPartition], spec: OffsetSpec, isolation: IsolationLevel, timeout_s: float
) -> dict[tuple[str, int], int]:
    futures = admin.list_offsets({tp: spec for tp in wanted}, isolation_level=isolation, request_timeout=timeout_s)
    # ListOffsetsResultInfo has `offset` at run time; the package's stubs leave it out.
    return {(tp.topic, tp.partition): int(future.result().offset) for tp, future in futures.items()}  # type: ignore[attr-defined]
