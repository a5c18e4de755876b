"""The batch path's progress records: a commit's records go out together, in batches of the copy's own producer.

One producer for the target per task (no second client); one partition of one topic takes one batch per request,
so a batch per record would write a commit of thousands of partitions at a few records per round trip. A progress
record not written fails the task at its next commit (its partition is copied again from the last one written).
"""

from __future__ import annotations

from dataclasses import dataclass

from services.data_mirror.copier import ProgressFailed
from shared.kafka.batch_producer import BatchProducer
from shared.kafka.outgoing_batches import Landed, Outcome, OutgoingBatch
from shared.kafka.record_batches import SourceRecord, encode_records
from shared.partition_key import PartitionKey

# A commit's progress records, batched: well under Kafka's default max.message.bytes and max.request.size (1 MiB).
PROGRESS_BATCH_BYTES = 256 * 1024
PROGRESS_RECORD_OVERHEAD = 24  # a v2 record's length, attributes, deltas and header count, generously


@dataclass(frozen=True, slots=True)
class ProgressNote:
    """What a progress batch carries back: whom to tell when it was not written (one per record)."""

    on_failure: tuple[ProgressFailed, ...]


class ProgressBatches:
    """Progress records kept until `send`, then written to partition 0 of the progress topic in batches."""

    def __init__(self, topic: str) -> None:
        self.target: PartitionKey = (topic, 0)
        self._pending: list[tuple[SourceRecord, ProgressFailed]] = []

    def add(self, key: bytes, value: bytes, timestamp_ms: int, on_failure: ProgressFailed) -> None:
        self._pending.append((SourceRecord(0, timestamp_ms, key, value, ()), on_failure))

    def send(self, producer: BatchProducer) -> None:
        """The records added since the last call, in batches of at most PROGRESS_BATCH_BYTES."""
        pending, self._pending = self._pending, []
        group: list[tuple[SourceRecord, ProgressFailed]] = []
        size = 0
        for entry in pending:
            record = entry[0]
            record_bytes = len(record.key or b"") + len(record.value or b"") + PROGRESS_RECORD_OVERHEAD
            if group and size + record_bytes > PROGRESS_BATCH_BYTES:
                self._send_batch(producer, group)
                group, size = [], 0
            group.append(entry)
            size += record_bytes
        if group:
            self._send_batch(producer, group)

    def _send_batch(self, producer: BatchProducer, group: list[tuple[SourceRecord, ProgressFailed]]) -> None:
        payload = encode_records([record for record, _ in group], 0)
        note = ProgressNote(tuple(on_failure for _, on_failure in group))
        producer.send(OutgoingBatch(self.target, payload, len(group), note))


def progress_landed(producer: BatchProducer, landed: Landed) -> bool:
    """Book `landed` if it is a progress batch (True); a batch not written tells each of its records' writers."""
    note = landed.batch.note
    if not isinstance(note, ProgressNote):
        return False
    if landed.outcome is Outcome.ACKNOWLEDGED:
        return True
    if landed.outcome is Outcome.REFUSED:
        producer.resume(landed.batch.key)
    for on_failure in note.on_failure:
        on_failure(landed.message or landed.outcome.value)
    return True
