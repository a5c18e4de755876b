"""Batch forwarding against a target that answers with errors: whatever the broker says, every record arrives
once, in order, and progress never passes a record the target did not write.

The task is driven step by step (forward a fetch, let the producer send, take the answers) with the real batch
producer in front of a broker stand-in that checks sequences as Kafka does (`test_batch_producer._Broker`).
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest
from aiokafka.record.default_records import DefaultRecordBatch

from services.data_mirror.batch_copy import BatchCopyTask, Fetching
from services.data_mirror.partition_copy import PartitionCopy
from services.data_mirror.sync_rules import SyncTracker
from shared.kafka.batch_link import BatchProducer, PartitionFetch
from tests.unit.services.data_mirror.test_copy_task import _spec
from tests.unit.shared.kafka.test_batch_producer import _Broker, _producer
from tests.unit.shared.kafka.test_record_batches import _batch as stored_batch

KEY = ("orders", 0)
UNKNOWN_SERVER_ERROR = -1


class RecordingBroker(_Broker):
    """The broker stand-in, keeping the keys of the records it wrote, in log order."""

    def __init__(self) -> None:
        super().__init__()
        self.written: list[bytes | None] = []

    def answer(self, payload: bytes) -> tuple[int, int]:
        before = len(self.log)
        error, offset = super().answer(payload)
        if error == 0 and len(self.log) > before:
            self.written += [record.key for record in DefaultRecordBatch(bytes(payload))]
        return error, offset


@dataclasses.dataclass
class Link:
    producer: BatchProducer
    read_committed: bool = False


def _task() -> tuple[BatchCopyTask, PartitionCopy, Fetching]:
    spec = _spec(1)
    work = dataclasses.replace(spec.partitions[0], max_record_bytes=1_000_000)
    task = BatchCopyTask(dataclasses.replace(spec, partitions=(work,), copy_batches=True), clients=None)  # type: ignore[arg-type]
    part = PartitionCopy(work, None, 0, SyncTracker(100), task.clock)
    part.position = 0
    task.parts[KEY] = part
    task.fetching[KEY] = fetching = Fetching(0)
    return task, part, fetching


async def _copy(
    task: BatchCopyTask, part: PartitionCopy, fetching: Fetching, link: Any, stored: bytes, end: int
) -> None:
    """Fetch (the same log) whenever the partition wants more, until the target acknowledged everything."""
    for _ in range(500):
        if fetching.position < end and not part.paused:
            task._forward_batches(link, part, fetching, PartitionFetch(fetching.position, 0, end, end, 0, [], stored))
        link.producer.pump()
        await asyncio.sleep(0.005)
        task._take_landed(link)
        if part.acked == end - 1 and link.producer.idle():
            return


@pytest.mark.asyncio
async def test_a_batch_answered_with_unknown_server_error_is_sent_again_and_nothing_is_lost() -> None:
    stored = b"".join(stored_batch(base, 100) for base in range(0, 300, 100))
    broker = RecordingBroker()
    producer = _producer(broker)
    broker.script.append(UNKNOWN_SERVER_ERROR)  # the first Produce: the broker's error -1
    task, part, fetching = _task()
    await _copy(task, part, fetching, Link(producer), stored, 300)
    task._advance_idle_positions()  # what a commit does before it writes progress
    assert broker.written == [f"k{offset}".encode() for offset in range(300)], "every record, once, in order"
    assert part.next_position() == 300
    assert part.refused_at is None


@pytest.mark.asyncio
async def test_progress_never_passes_records_the_target_refused_with_unknown_server_error() -> None:
    """A record the target keeps refusing with -1 stops its partition there: progress stays before it."""
    stored = stored_batch(0, 10)
    broker = RecordingBroker()
    producer = _producer(broker)
    broker.script.extend([UNKNOWN_SERVER_ERROR] * 2)  # the batch, then its first record sent on its own
    task, part, fetching = _task()
    await _copy(task, part, fetching, Link(producer), stored, 10)
    task._advance_idle_positions()
    assert broker.written == []
    assert part.refused_at == 0
    assert part.next_position() == 0
    assert part.failure is not None
    assert "UNKNOWN_SERVER_ERROR" in part.failure
