"""Send records one at a time and wait for each acknowledgement (asyncio, aiokafka; idempotent, acks=all).

For the few records Strait's asyncio services write themselves: control events and status records.

aiokafka's `send_and_wait` has no bound of its own: with a cluster that stops answering, and sometimes after it
answers again (a connection it does not refresh), it waits forever (aiokafka issue 1101). A checkpoint service
whose status publication hung that way after a 39 s black hole to its target never wrote another checkpoint (the
soak). So each send is bounded, and a producer that let one time out is replaced before the next send.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from typing import Any

from shared.errors import KafkaOperationError
from shared.kafka.errors import translate_kafka_error
from shared.kafka.factories import aio_producer

SEND_TIMEOUT_S = 60.0  # a control or status record not acknowledged in a minute: the producer is given up
WEDGED_STOP_S = 3.0  # stopping a given-up producer may hang too (the same issue): bounded


class AsyncSender:
    """One producer to one cluster; `send` raises KafkaOperationError (or AuthorizationError) on failure."""

    def __init__(
        self,
        props: Mapping[str, str],
        *,
        send_timeout_s: float = SEND_TIMEOUT_S,
        make_producer: Callable[[], Any] | None = None,
    ) -> None:
        settings = dict(props)
        self._make_producer = make_producer or (lambda: aio_producer(settings, enable_idempotence=True, acks="all"))
        self._producer = self._make_producer()
        self._send_timeout_s = send_timeout_s
        self._replaced = False  # a new producer, started at the next send
        self._starting = asyncio.Lock()

    async def start(self) -> None:
        """Connect; raises KafkaOperationError when the cluster cannot be reached."""
        await self._start(self._producer)

    async def send(self, topic: str, value: bytes, key: bytes, *, operation: str = "produce") -> None:
        """Write one record and wait until the broker has it; a failure names `operation` and the topic."""
        producer = await self._ready_producer()
        try:
            await asyncio.wait_for(producer.send_and_wait(topic, value, key=key), self._send_timeout_s)
        except TimeoutError as exc:
            await self._replace(producer)
            raise KafkaOperationError(
                f"{operation} to {topic} failed: not acknowledged within {self._send_timeout_s:g}s "
                "(the next record goes through a new producer)",
                operation=operation,
            ) from exc
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

    async def _start(self, producer: Any) -> None:
        try:
            await producer.start()
        except Exception as exc:  # aiokafka errors: unreachable, not allowed
            raise translate_kafka_error(exc, operation="start producer") from exc

    async def _ready_producer(self) -> Any:
        """The producer to send with; a replacement is started first, once, however many sends wait for it (the
        start is bounded too: an idempotent producer asks for its id until it gets one)."""
        async with self._starting:
            producer = self._producer
            if self._replaced:
                try:
                    await asyncio.wait_for(self._start(producer), self._send_timeout_s)
                except TimeoutError as exc:
                    await self._replace(producer)
                    raise KafkaOperationError(
                        f"start producer failed: not connected within {self._send_timeout_s:g}s",
                        operation="start producer",
                    ) from exc
                except KafkaOperationError:
                    await self._replace(producer)  # a producer that failed to start is not started again
                    raise
                self._replaced = False
            return producer

    async def _replace(self, wedged: Any) -> None:
        """Give up `wedged` (what it still holds is a control or status record a newer one supersedes)."""
        if self._producer is not wedged:
            return
        self._producer = self._make_producer()
        self._replaced = True
        await _close_given_up(wedged)


async def _close_given_up(producer: Any) -> None:
    """Close a producer whose send never ended. aiokafka's stop first waits for its queue to flush or its sender
    task to end, neither of which a wedged producer does: the sender task (aiokafka's own attribute) is cancelled
    first, so the stop closes its connections and background tasks instead of leaving them retrying for good."""
    sender_task = getattr(getattr(producer, "_sender", None), "sender_task", None)
    if sender_task is not None and not sender_task.done():
        sender_task.cancel()
    with contextlib.suppress(Exception):  # it may still fail or hang while it stops: it is dropped either way
        await asyncio.wait_for(producer.stop(), WEDGED_STOP_S)
