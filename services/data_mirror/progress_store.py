"""Read the last committed progress of every partition at start-up (the compacted progress topic, to its end)."""

from __future__ import annotations

import time
from collections.abc import Mapping

import structlog
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from services.data_mirror.progress import Progress, ProgressKey, decode_progress_record
from shared.control.topic_names import PROGRESS_READER_GROUP
from shared.errors import CodecError, KafkaOperationError
from shared.kafka.factories import confluent_consumer

_log = structlog.get_logger(__name__)
# A topic created a moment ago: not in the client's metadata yet, or its leader not elected yet.
_NOT_YET = frozenset(
    {KafkaError._UNKNOWN_PARTITION, KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE}
)


def load_progress(
    props: Mapping[str, str], topic: str, flow: str, *, timeout_s: float = 60
) -> dict[tuple[str, int], Progress]:
    """(source topic, partition) -> committed progress, for `flow`; read_committed so aborted epochs do not count."""
    consumer = confluent_consumer(
        props,
        **{"group.id": PROGRESS_READER_GROUP, "enable.auto.commit": False, "isolation.level": "read_committed"},
    )
    progress: dict[tuple[str, int], Progress] = {}
    try:
        partition = TopicPartition(topic, 0)
        high = _end_offset(consumer, partition, timeout_s)
        if high <= 0:
            return progress
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        deadline = time.monotonic() + timeout_s
        position = 0
        while True:
            position = consumer.position([partition])[0].offset
            if position >= high:
                break
            if time.monotonic() > deadline:
                raise KafkaOperationError(
                    f"progress topic {topic} not read to its end ({position}/{high}) within {timeout_s}s",
                    operation="load progress",
                )
            for message in consumer.consume(num_messages=5000, timeout=0.5):
                if message.error() or message.key() is None:
                    continue
                try:
                    key = ProgressKey.decode(message.key() or b"")
                    if key.flow != flow:
                        continue
                    value = message.value()
                    if value is None:
                        progress.pop((key.topic, key.partition), None)
                    else:
                        progress[(key.topic, key.partition)] = decode_progress_record(value)
                except CodecError as exc:
                    _log.warning("progress_record_skipped", topic=topic, offset=message.offset(), error=str(exc))
        return progress
    finally:
        consumer.close()


def _end_offset(consumer: Consumer, partition: TopicPartition, timeout_s: float) -> int:
    """The partition's end offset; a topic created a moment ago may have no leader yet, or be missing from the client's
    metadata: ask again until the deadline."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return int(consumer.get_watermark_offsets(partition, timeout=timeout_s)[1])
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            passing = isinstance(error, KafkaError) and (error.code() in _NOT_YET or error.retriable())
            if not passing or time.monotonic() > deadline:
                raise
            time.sleep(0.5)
