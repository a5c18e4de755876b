"""Send records one at a time and wait for each acknowledgement (asyncio, aiokafka; idempotent, acks=all).

For the few records Strait's asyncio services write themselves: control events and status records.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from shared.kafka.errors import translate_kafka_error
from shared.kafka.factories import aio_producer


class AsyncSender:
    """One producer to one cluster; `send` raises KafkaOperationError (or AuthorizationError) on failure."""

    def __init__(self, props: Mapping[str, str]) -> None:
        self._producer = aio_producer(props, enable_idempotence=True, acks="all")

    async def start(self) -> None:
        """Connect; raises KafkaOperationError when the cluster cannot be reached."""
        try:
            await self._producer.start()
        except Exception as exc:  # aiokafka errors: unreachable, not allowed
            raise translate_kafka_error(exc, operation="start producer") from exc

    async def send(self, topic: str, value: bytes, key: bytes, *, operation: str = "produce") -> None:
        """Write one record and wait until the broker has it; a failure names `operation` and the topic."""
        try:
            await self._producer.send_and_wait(topic, value, key=key)
        except Exception as exc:  # aiokafka errors: unreachable, not allowed, record refused
            raise translate_kafka_error(exc, operation=operation, resource=topic) from exc

    async def stop(self, timeout_s: float) -> bool:
        """Flush and close within `timeout_s`; False if records were still unacknowledged then (they are dropped).

        aiokafka's own stop waits for every pending record without a bound: with the cluster gone that is forever.
        The producer is closed even if it never started (aiokafka warns about every unclosed producer).
        """
        try:
            await asyncio.wait_for(self._producer.stop(), timeout_s)
        except TimeoutError:
            return False
        return True
