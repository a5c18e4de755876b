"""Publish to and follow Strait's control and status topics on one cluster (asyncio, aiokafka)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping

import structlog
from aiokafka import TopicPartition
from pydantic import BaseModel

from shared.control.codec import Event, decode_event, encode_event
from shared.control.topic_names import CONTROL_TOPIC, STATUS_TOPIC
from shared.kafka.factories import aio_consumer, aio_producer, confluent_admin
from shared.kafka.topics import ensure_internal_topic

_log = structlog.get_logger(__name__)
STOP_TIMEOUT_S = 3.0


def event_key(event: BaseModel) -> bytes:
    """Compaction key: the latest event of each type per flow (or per instance, for status) survives."""
    instance = getattr(event, "instance", None)
    if instance is not None:
        return str(instance).encode()
    return f"{getattr(event, 'type', '')}:{getattr(event, 'flow', '')}".encode()


async def ensure_control_topics(props: Mapping[str, str], replication_factor: int) -> None:
    """Create the compacted control and status topics if missing (any service may be first)."""

    def create() -> None:
        admin = confluent_admin(props)
        for topic in (CONTROL_TOPIC, STATUS_TOPIC):
            ensure_internal_topic(admin, topic, replication_factor=replication_factor)

    await asyncio.to_thread(create)


class ControlPublisher:
    """Writes control events and status records to one cluster; idempotent producer, acks=all."""

    def __init__(self, props: Mapping[str, str], *, replication_factor: int) -> None:
        self._props = dict(props)
        self._replication_factor = replication_factor
        self._producer = aio_producer(props, enable_idempotence=True, acks="all")
        self._started = False

    async def start(self) -> None:
        """Create the topics if needed and connect."""
        await ensure_control_topics(self._props, self._replication_factor)
        await self._producer.start()
        self._started = True

    async def publish(self, event: BaseModel) -> None:
        """Send one control event and wait until the broker has it."""
        await self._producer.send_and_wait(CONTROL_TOPIC, encode_event(event), key=event_key(event))

    async def publish_status(self, status: BaseModel) -> None:
        """Send one status record (keyed by instance on the compacted status topic)."""
        await self._producer.send_and_wait(STATUS_TOPIC, encode_event(status), key=event_key(status))

    async def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """Flush and close within `timeout_s`; safe to call twice, and after a start that failed or never happened.

        aiokafka's stop waits for every pending record, without a bound: with the cluster gone that is forever.
        What is still pending then is control and status records the cluster would not take anyway.
        """
        # The producer is closed even if never started: aiokafka warns about every unclosed producer.
        self._started = False
        try:
            await asyncio.wait_for(self._producer.stop(), timeout_s)
        except TimeoutError:
            _log.warning("control_records_dropped_at_stop", waited_s=timeout_s, reason="cluster did not acknowledge")


async def follow_events(
    props: Mapping[str, str], topic: str = CONTROL_TOPIC, *, from_beginning: bool = True
) -> AsyncIterator[Event]:
    """Yield every readable event on `topic` (one partition, no consumer group), forever.

    Unknown or malformed events were already skipped with a warning by the codec.
    """
    consumer = aio_consumer(props, enable_auto_commit=False, auto_offset_reset="earliest")
    await consumer.start()
    try:
        partition = TopicPartition(topic, 0)
        consumer.assign([partition])
        if from_beginning:
            await consumer.seek_to_beginning(partition)
        else:
            await consumer.seek_to_end(partition)
        while True:
            batches = await consumer.getmany(timeout_ms=1000)
            for records in batches.values():
                for record in records:
                    event = decode_event(record.value, topic=topic, offset=record.offset)
                    if event is not None:
                        yield event
    finally:
        await consumer.stop()
