"""One-shot reads without a consumer group (blocking, confluent-kafka): a partition to its end, or its last record.

For command-line tools; long-running services follow topics instead (`shared.kafka.follow`)."""

from __future__ import annotations

import time
from collections.abc import Mapping

from confluent_kafka import Consumer, KafkaException, TopicPartition

from shared.kafka.errors import translate_kafka_error
from shared.kafka.factories import confluent_consumer
from shared.kafka.follow import FollowedRecord
from shared.kafka.partition_reader import read_range


def _reader(props: Mapping[str, str]) -> Consumer:
    return confluent_consumer(props, **{"group.id": "strait-reader", "enable.auto.commit": False})


def _exists(consumer: Consumer, topic: str, timeout_s: float) -> bool:
    found = consumer.list_topics(topic, timeout=timeout_s).topics.get(topic)
    return found is not None and found.error is None


def read_to_end(
    props: Mapping[str, str], topic: str, *, partition: int = 0, timeout_s: float = 30
) -> list[FollowedRecord]:
    """Every record of one partition up to its end offset at call time; empty if the topic does not exist."""
    consumer = _reader(props)
    try:
        if not _exists(consumer, topic, timeout_s):
            return []
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout_s)
        deadline = time.monotonic() + timeout_s
        return list(read_range(consumer, topic, partition, low, high, deadline))
    except KafkaException as exc:
        raise translate_kafka_error(exc, operation="read topic", resource=topic) from exc
    finally:
        consumer.close()


def read_all_partitions(
    props: Mapping[str, str], topic: str, *, timeout_s: float = 30
) -> dict[int, list[FollowedRecord]]:
    """partition -> every record up to its end offset at call time, for each partition; empty if no such topic."""
    consumer = _reader(props)
    try:
        found = consumer.list_topics(topic, timeout=timeout_s).topics.get(topic)
        if found is None or found.error is not None:
            return {}
        deadline = time.monotonic() + timeout_s
        records: dict[int, list[FollowedRecord]] = {}
        for partition in sorted(found.partitions):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout_s)
            records[partition] = list(read_range(consumer, topic, partition, low, high, deadline))
        return records
    except KafkaException as exc:
        raise translate_kafka_error(exc, operation="read topic", resource=topic) from exc
    finally:
        consumer.close()


def last_record(
    props: Mapping[str, str], topic: str, *, partition: int = 0, timeout_s: float = 30
) -> FollowedRecord | None:
    """The newest record of one partition, or None when it is empty or the topic does not exist."""
    consumer = _reader(props)
    try:
        if not _exists(consumer, topic, timeout_s):
            return None
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout_s)
        if high <= low:
            return None
        deadline = time.monotonic() + timeout_s
        # A trailing transaction marker has an offset but no record; step back until a record is found.
        for start in range(high - 1, max(low, high - 10) - 1, -1):
            records = list(read_range(consumer, topic, partition, start, high, deadline))
            if records:
                return records[-1]
        return None
    except KafkaException as exc:
        raise translate_kafka_error(exc, operation="read topic", resource=topic) from exc
    finally:
        consumer.close()
