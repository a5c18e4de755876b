"""AsyncSender over stand-in aiokafka producers: a send the cluster never acknowledges fails within its bound, and
the next record goes through a new producer (aiokafka's own send_and_wait waits forever)."""

from __future__ import annotations

import asyncio

import pytest

from shared.errors import KafkaOperationError
from shared.kafka.async_sender import AsyncSender


class _Producer:
    """Acknowledges every record, or (`wedged`) none, as an aiokafka producer stuck on a lost connection does."""

    def __init__(self, *, wedged: bool = False, fails_to_start: bool = False) -> None:
        self.wedged = wedged
        self.fails_to_start = fails_to_start
        self.started = self.stopped = False
        self.sent: list[bytes] = []

    async def start(self) -> None:
        if self.fails_to_start:
            raise ConnectionError("cluster unreachable")
        self.started = True

    async def send_and_wait(self, topic: str, value: bytes, key: bytes) -> None:
        if self.wedged:
            await asyncio.Event().wait()  # never acknowledged
        self.sent.append(value)

    async def stop(self) -> None:
        self.stopped = True


def _sender(*producers: _Producer) -> AsyncSender:
    made = iter(producers)
    return AsyncSender({}, send_timeout_s=0.05, make_producer=lambda: next(made))


async def test_a_send_never_acknowledged_fails_in_time_and_the_next_goes_through_a_new_producer() -> None:
    wedged, fresh = _Producer(wedged=True), _Producer()
    sender = _sender(wedged, fresh)
    await sender.start()
    never_acknowledged = r"publish status to strait\.status\.internal failed: not acknowledged"
    with pytest.raises(KafkaOperationError, match=never_acknowledged):
        await asyncio.wait_for(sender.send("strait.status.internal", b"one", b"k", operation="publish status"), 5)
    assert wedged.stopped
    await sender.send("strait.status.internal", b"two", b"k")
    assert fresh.started
    assert fresh.sent == [b"two"]


async def test_a_new_producer_that_cannot_start_is_replaced_again_at_the_next_send() -> None:
    producers = (_Producer(wedged=True), _Producer(fails_to_start=True), _Producer())
    sender = _sender(*producers)
    await sender.start()
    for _ in range(2):
        with pytest.raises(KafkaOperationError):
            await sender.send("t", b"lost", b"k")
    await sender.send("t", b"kept", b"k")
    assert producers[2].sent == [b"kept"]
