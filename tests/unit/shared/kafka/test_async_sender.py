"""AsyncSender over stand-in aiokafka producers: a send the cluster never acknowledges fails within its bound, and
the next record goes through a new producer (aiokafka's own send_and_wait waits forever)."""

from __future__ import annotations

import asyncio

import pytest

from shared.errors import KafkaOperationError
from shared.kafka.async_sender import AsyncSender


class _Sender:
    """aiokafka's sender: a background task that, in a wedged producer, never ends."""

    def __init__(self) -> None:
        self.sender_task: asyncio.Task[None] | None = None


class _Producer:
    """Acknowledges every record, or (`wedged`) none, as an aiokafka producer stuck on a lost connection does; as
    aiokafka's, its stop waits for its sender task to end."""

    def __init__(self, *, wedged: bool = False, fails_to_start: bool = False, hangs_at_start: bool = False) -> None:
        self.wedged = wedged
        self.fails_to_start = fails_to_start
        self.hangs_at_start = hangs_at_start
        self.starts = 0
        self.started = self.stopped = False
        self.sent: list[bytes] = []
        self._sender = _Sender()

    async def start(self) -> None:
        self.starts += 1
        if self.fails_to_start:
            raise ConnectionError("cluster unreachable")
        if self.hangs_at_start:
            await asyncio.Event().wait()  # an idempotent producer asking for its id from a dark cluster
        await asyncio.sleep(0.01)  # a start takes a round trip: concurrent sends would both start it
        self._sender.sender_task = asyncio.create_task(self._send_forever() if self.wedged else asyncio.sleep(0))
        self.started = True

    async def send_and_wait(self, topic: str, value: bytes, key: bytes) -> None:
        if self.wedged:
            await asyncio.Event().wait()  # never acknowledged
        self.sent.append(value)

    async def _send_forever(self) -> None:
        await asyncio.Event().wait()

    async def stop(self) -> None:
        if self._sender.sender_task is not None:
            await asyncio.wait([self._sender.sender_task])
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


async def test_sends_waiting_for_a_replacement_start_it_once() -> None:
    producers = (_Producer(wedged=True), _Producer())
    sender = _sender(*producers)
    await sender.start()
    with pytest.raises(KafkaOperationError):
        await sender.send("t", b"lost", b"k")
    await asyncio.gather(*(sender.send("t", f"{i}".encode(), b"k") for i in range(3)))
    assert producers[1].starts == 1
    assert sorted(producers[1].sent) == [b"0", b"1", b"2"]


async def test_a_replacement_that_cannot_connect_fails_the_send_in_time() -> None:
    producers = (_Producer(wedged=True), _Producer(hangs_at_start=True), _Producer())
    sender = _sender(*producers)
    await sender.start()
    with pytest.raises(KafkaOperationError):
        await sender.send("t", b"lost", b"k")
    with pytest.raises(KafkaOperationError, match="not connected within"):
        await asyncio.wait_for(sender.send("t", b"lost too", b"k"), 5)
    await sender.send("t", b"kept", b"k")
    assert producers[2].sent == [b"kept"]


async def test_a_given_up_producer_is_closed_although_its_sender_never_ends() -> None:
    wedged = _Producer(wedged=True)
    sender = _sender(wedged, _Producer())
    await sender.start()
    with pytest.raises(KafkaOperationError):
        await sender.send("t", b"lost", b"k")
    assert wedged._sender.sender_task is not None
    assert wedged._sender.sender_task.cancelled()
    assert wedged.stopped
