"""The driver's synchronous link to the control and status topics on each target cluster."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog
from confluent_kafka import OFFSET_END, KafkaError, TopicPartition

from shared.control import (
    CONTROL_TOPIC,
    STATUS_TOPIC,
    MirrorHandover,
    ServiceStatus,
    TopicsChanged,
    decode_event,
    encode_event,
)
from shared.control.channel import event_key
from shared.control.topic_names import CONTROL_READER_GROUP
from shared.errors import KafkaOperationError
from shared.kafka.factories import confluent_admin, confluent_consumer, confluent_producer
from shared.kafka.topics import ensure_internal_topic

_log = structlog.get_logger(__name__)


class ControlLink:
    """Publishes status and notices `topics-changed` events for the flows of one target cluster."""

    def __init__(self, producer: Any, consumer: Any, flows: set[str]) -> None:
        self.flows = flows
        self._producer = producer
        self._consumer = consumer
        self.read_error: str | None = None  # what failed in the last `topics_changed` call, if anything

    @classmethod
    def open(
        cls,
        props: Mapping[str, str],
        flows: set[str],
        *,
        replication_factor: int,
    ) -> ControlLink:
        """Make sure the control and status topics exist, then link to them, reading control events from now on."""
        admin = confluent_admin(props)
        for topic in (CONTROL_TOPIC, STATUS_TOPIC):
            ensure_internal_topic(admin, topic, replication_factor=replication_factor)
        producer = confluent_producer(props, **{"enable.idempotence": True, "acks": "all", "linger.ms": 0})
        consumer = confluent_consumer(props, **{"group.id": CONTROL_READER_GROUP, "enable.auto.commit": False})
        consumer.assign([TopicPartition(CONTROL_TOPIC, 0, OFFSET_END)])
        return cls(producer, consumer, flows)

    def topics_changed(self) -> bool:
        """True if a `topics-changed` event for one of our flows arrived since the last call (non-blocking).

        Also True after a read error, kept in `read_error` until a call reads cleanly: an event may have been
        missed, and looking at the topics again is cheap.
        """
        changed = False
        self.read_error = None
        for message in self._consumer.consume(num_messages=100, timeout=0):
            if error := message.error():
                if error.code() == KafkaError._PARTITION_EOF:
                    continue
                self.read_error = f"reading {CONTROL_TOPIC}: {error.name()}: {error.str()}"
                changed = True
                continue
            event = decode_event(message.value(), topic=message.topic(), offset=message.offset())
            if isinstance(event, TopicsChanged) and event.flow in self.flows:
                changed = True
        return changed

    def control_end_offset(self) -> int:
        """Where a task starts reading the control topic: any hand-over request for it comes after this."""
        return int(self._consumer.get_watermark_offsets(TopicPartition(CONTROL_TOPIC, 0), timeout=10)[1])

    def request_handover(self, flow: str, tasks: list[tuple[int, int]], *, timeout_s: float = 10) -> None:
        """Ask the running tasks (slot, generation) of `flow` to commit and return."""
        event = MirrorHandover(flow=flow, tasks=tuple(tasks))
        self._producer.produce(CONTROL_TOPIC, value=encode_event(event), key=event_key(event))
        if self._producer.flush(timeout_s):
            # Not known to be written: the driver asks again next round (a late duplicate names no live task).
            raise KafkaOperationError(
                f"hand-over request for {flow} not acknowledged on {CONTROL_TOPIC} within {timeout_s:g} s",
                operation="request hand-over",
            )

    def publish_status(self, status: ServiceStatus, *, timeout_s: float = 10) -> None:
        """Send a status record; waits briefly so a final status survives process exit."""
        self._producer.produce(STATUS_TOPIC, value=encode_event(status), key=event_key(status))
        self._producer.flush(timeout_s)

    def close(self, *, timeout_s: float = 10) -> None:
        """Flush and close both clients (what the target has not acknowledged by then is dropped: status only)."""
        self._producer.flush(timeout_s)
        self._consumer.close()
