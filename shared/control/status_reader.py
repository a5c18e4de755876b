"""Read every instance's latest status from the compacted status topic (for `strait status` and the translator)."""

from __future__ import annotations

import time
from collections.abc import Mapping

from confluent_kafka import OFFSET_BEGINNING, TopicPartition

from shared.control.codec import decode_event
from shared.control.events import ServiceStatus
from shared.control.topic_names import STATUS_READER_GROUP, STATUS_TOPIC
from shared.kafka.factories import confluent_consumer


def read_statuses(props: Mapping[str, str], *, timeout_s: float = 10) -> dict[str, ServiceStatus]:
    """instance -> its latest status; empty if the topic does not exist yet."""
    consumer = confluent_consumer(props, **{"group.id": STATUS_READER_GROUP, "enable.auto.commit": False})
    statuses: dict[str, ServiceStatus] = {}
    try:
        metadata = consumer.list_topics(STATUS_TOPIC, timeout=timeout_s)
        topic = metadata.topics.get(STATUS_TOPIC)
        if topic is None or topic.error is not None:
            return statuses
        _, high = consumer.get_watermark_offsets(TopicPartition(STATUS_TOPIC, 0), timeout=timeout_s)
        if high <= 0:
            return statuses
        consumer.assign([TopicPartition(STATUS_TOPIC, 0, OFFSET_BEGINNING)])
        deadline = time.monotonic() + timeout_s
        position = 0
        while position < high and time.monotonic() < deadline:
            for message in consumer.consume(num_messages=1000, timeout=0.5):
                if message.error():
                    continue
                position = (message.offset() or 0) + 1
                event = decode_event(message.value(), topic=STATUS_TOPIC, offset=message.offset())
                if isinstance(event, ServiceStatus):
                    statuses[event.instance] = event
                elif message.value() is None and message.key() is not None:
                    statuses.pop(bytes(message.key() or b"").decode(errors="replace"), None)
        return statuses
    finally:
        consumer.close()
