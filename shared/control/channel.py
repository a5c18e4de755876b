"""Publish to and follow Strait's control and status topics on one cluster (asyncio, aiokafka)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping

import structlog
from pydantic import BaseModel

from shared.control.codec import Event, decode_event, encode_event
from shared.control.topic_names import CONTROL_TOPIC, COORDINATION_TOPICS, STATUS_TOPIC
from shared.kafka.async_sender import AsyncSender
from shared.kafka.follow import tail
from shared.kafka.topic_admin import TopicAdmin
from shared.kafka.topics import ROLLED_COMPACTED

_log = structlog.get_logger(__name__)
STOP_TIMEOUT_S = 3.0


def event_key(event: BaseModel) -> bytes:
    """Compaction key: the latest event of each type per flow (or per instance, for status) survives."""
    instance = getattr(event, "instance", None)
    if instance is not None:
        return str(instance).encode()
    return f"{getattr(event, 'type', '')}:{getattr(event, 'flow', '')}".encode()


async def ensure_control_topics(props: Mapping[str, str], replication_factor: int, cluster: str = "target") -> None:
    """Create the compacted control, status and DR topics if missing (any service may be first); `cluster` names the
    cluster in errors."""

    def ensure() -> None:
        admin = TopicAdmin(cluster, props, timeout_s=30)
        for topic in COORDINATION_TOPICS:
            admin.ensure_internal_topic(topic, replication_factor=replication_factor, configs=ROLLED_COMPACTED)

    await asyncio.to_thread(ensure)


class ControlPublisher:
    """Writes control events and status records to one cluster; idempotent producer, acks=all."""

    def __init__(self, props: Mapping[str, str], *, replication_factor: int, cluster: str = "target") -> None:
        self._props = dict(props)
        self._replication_factor = replication_factor
        self._cluster = cluster
        self._sender = AsyncSender(props)
        self._started = False

    async def start(self) -> None:
        """Create the topics if needed and connect."""
        await ensure_control_topics(self._props, self._replication_factor, self._cluster)
        await self._sender.start()
        self._started = True

    async def publish(self, event: BaseModel) -> None:
        """Send one control event and wait until the broker has it."""
        operation = f"publish {getattr(event, 'type', 'control event')}"
        await self._sender.send(CONTROL_TOPIC, encode_event(event), key=event_key(event), operation=operation)

    async def publish_status(self, status: BaseModel) -> None:
        """Send one status record (keyed by instance on the compacted status topic)."""
        await self._sender.send(STATUS_TOPIC, encode_event(status), key=event_key(status), operation="publish status")

    async def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """Flush and close within `timeout_s`; safe to call twice, and after a start that failed or never happened.

        What is still pending after `timeout_s` is control and status records the cluster would not take anyway.
        """
        self._started = False
        if not await self._sender.stop(timeout_s):
            _log.warning("control_records_dropped_at_stop", waited_s=timeout_s, reason="cluster did not acknowledge")


async def follow_events(
    props: Mapping[str, str], topic: str = CONTROL_TOPIC, *, from_beginning: bool = True
) -> AsyncIterator[Event]:
    """Yield every readable event on `topic` (one partition, no consumer group), forever.

    Unknown or malformed events were already skipped with a warning by the codec.
    """
    async with contextlib.aclosing(tail(props, topic, from_beginning=from_beginning)) as records:
        async for record in records:  # closed with this generator, so the consumer is stopped with it
            event = decode_event(record.value, topic=topic, offset=record.offset)
            if event is not None:
                yield event
