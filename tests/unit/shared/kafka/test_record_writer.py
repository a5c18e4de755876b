"""RecordWriter called from two threads at once: each write returns the offsets of its own records."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from shared.kafka import record_writer
from shared.kafka.record_writer import RecordWriter

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
