"""RecordWriter called from two threads at once: each write returns the offsets of its own records. LoopRecordWriter
returns each record's offset, hands the loop back while acknowledgements are on their way, and names failures."""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from shared.errors import KafkaOperationError
from shared.kafka import record_writer
from shared.kafka.record_writer import LoopRecordWriter, RecordWriter

Report = Callable[[Any, Any], None]


class _Delivered:
    def __init__(self, offset: int) -> None:
        self._offset = offset

    def offset(self) -> int:
        return self._offset


class _Producer:
    """librdkafka's part that matters here: a flush serves every queued report, in the thread that flushes.

    A flush first waits briefly for a second flusher, so that two writes that overlap are made to overlap fully.
    """

    def __init__(self) -> None:
        self.queue: list[tuple[Report, int]] = []
        self.next_offset = 0
        self.lock = threading.Lock()
        self.both_flushing = threading.Barrier(2)

    def produce(self, topic: str, value: bytes, key: bytes, partition: int, on_delivery: Report) -> None:
        with self.lock:
            self.queue.append((on_delivery, self.next_offset))
            self.next_offset += 1

    def poll(self, timeout: float) -> int:
        return 0

    def flush(self, timeout: float) -> int:
        with contextlib.suppress(threading.BrokenBarrierError):  # the other write is not flushing now
            self.both_flushing.wait(timeout=0.3)
        with self.lock:
            served, self.queue = self.queue, []
        for report, offset in served:
            time.sleep(0.01)
            report(None, _Delivered(offset))
        return 0


def test_two_threads_writing_at_once_each_get_their_own_offsets(monkeypatch: pytest.MonkeyPatch) -> None:
    producer = _Producer()
    monkeypatch.setattr(record_writer, "confluent_producer", lambda props, **settings: producer)
    writer = RecordWriter("B", {"bootstrap.servers": "unused:9092"})
    results: dict[str, list[int]] = {}

    def write(name: str) -> None:
        results[name] = list(writer.write("status", [(name.encode(), b"v")] * 5))  # as it was on return

    threads = [threading.Thread(target=write, args=(name,)) for name in ("status", "handover")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert sorted(results) == ["handover", "status"]
    assert all(offset >= 0 for offsets in results.values() for offset in offsets), results
    assert sorted(results["status"] + results["handover"]) == list(range(10))


class _Error:
    def __init__(self, text: str) -> None:
        self._text = text

    def code(self) -> int:
        return -1

    def name(self) -> str:
        return "_MSG_TIMED_OUT"

    def str(self) -> builtins.str:  # librdkafka's KafkaError.str()
        return self._text

    def __str__(self) -> builtins.str:
        return self._text

    def retriable(self) -> bool:
        return False

    def fatal(self) -> bool:
        return False


class _PolledProducer:
    """A producer whose reports are served only by poll(), each `polls_per_ack` polls after it was produced, and
    which fails the records listed in `failing` (by their position in the write)."""

    def __init__(self, polls_per_ack: int = 3, failing: frozenset[int] = frozenset(), never_ack: bool = False) -> None:
        self.queue: list[tuple[Report, int, int]] = []  # report, offset, polls left
        self.next_offset = 100
        self.polls_per_ack = polls_per_ack
        self.failing = failing
        self.never_ack = never_ack
        self.produced = 0

    def produce(self, topic: str, value: bytes, key: bytes, partition: int, on_delivery: Report) -> None:
        self.queue.append((on_delivery, self.next_offset, self.polls_per_ack))
        self.next_offset += 1

    def poll(self, timeout: float) -> int:
        if self.never_ack:
            return 0
        ready = [entry for entry in self.queue if entry[2] <= 0]
        self.queue = [(report, offset, left - 1) for report, offset, left in self.queue if left > 0]
        for report, offset, _ in ready:
            position = self.produced
            self.produced += 1
            report(_Error("delivery timed out") if position in self.failing else None, _Delivered(offset))
        return len(ready)

    def flush(self, timeout: float) -> int:
        return 0


def _loop_writer(monkeypatch: pytest.MonkeyPatch, producer: _PolledProducer) -> LoopRecordWriter:
    monkeypatch.setattr(record_writer, "confluent_producer", lambda props, **settings: producer)
    return LoopRecordWriter("B", {"bootstrap.servers": "unused:9092"})


async def test_the_loop_writer_returns_each_records_offset_and_lets_other_tasks_run_meanwhile(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    writer = _loop_writer(monkeypatch, _PolledProducer(polls_per_ack=5))
    ticks = 0

    async def other_work() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    other = asyncio.create_task(other_work())
    offsets = await writer.write("B.checkpoints.internal", [(b"k", b"v")] * 3)
    other.cancel()
    assert offsets == [100, 101, 102]
    assert ticks >= 5  # the loop ran other work while the acknowledgements were awaited


async def test_the_loop_writer_raises_a_failed_delivery_naming_the_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    writer = _loop_writer(monkeypatch, _PolledProducer(polls_per_ack=0, failing=frozenset({1})))
    with pytest.raises(KafkaOperationError, match="cluster B"):
        await writer.write("B.checkpoints.internal", [(b"k", b"v")] * 3)


async def test_the_loop_writer_gives_up_when_acknowledgements_do_not_come(monkeypatch: pytest.MonkeyPatch) -> None:
    writer = _loop_writer(monkeypatch, _PolledProducer(never_ack=True))
    with pytest.raises(KafkaOperationError, match=r"2 records not acknowledged in 0\.05s"):
        await writer.write("B.checkpoints.internal", [(b"k", b"v")] * 2, timeout_s=0.05)
