"""Queues a partition's fetched batches for the target: as they are, merged, or re-encoded (`forwarding` decides).

A batch the target cannot take whole (larger than max.message.bytes, refused as a batch) goes record by record,
and a record too large on its own stops its partition as the record path's refusal does (`PartitionCopy.refuse`).
The target gives a forwarded batch's records consecutive offsets, so a run of them keeps one offset sync exact.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from services.data_mirror.epoch_checks import Fetching
from services.data_mirror.forwarding import PartitionState, why_reencoded
from services.data_mirror.partition_copy import Clock, PartitionCopy
from services.data_mirror.record_size import RECORD_BATCH_OVERHEAD
from shared.kafka.batch_producer import BatchProducer, OutgoingBatch
from shared.kafka.record_batches import SourceBatch, SourceRecord, TargetBatch, encode_records, for_target, records_of


def _newest(records: Sequence[SourceRecord]) -> int:
    """The newest timestamp of `records` (-1 when none has one: message format v0)."""
    return max((record.timestamp for record in records if record.timestamp is not None), default=-1)


class BatchSends:
    """What the copier sends for each fetched batch; `records` counts the records queued."""

    def __init__(
        self, producer: Callable[[], BatchProducer], clock: Clock, hold: Callable[[PartitionCopy], None]
    ) -> None:
        self._producer = producer
        self._hold = hold
        self.clock = clock
        self.records = 0

    def merge(self, part: PartitionCopy, fetching: Fetching, group: list[SourceBatch]) -> bool:
        """Send consecutive small batches as one, re-encoded in their codec (one by one if too large for the target)."""
        records = [record for batch in group for record in records_of(batch)]
        encoded = encode_records(records, group[0].compression)
        limit = part.work.max_record_bytes
        if limit is not None and len(encoded) > limit:
            return all(self.send(part, fetching, batch) for batch in group)
        for batch in group:
            self._count(part, batch)
        upstream = range(group[0].base_offset, group[-1].last_offset + 1)
        self._queue(part, encoded, upstream, max(batch.max_timestamp for batch in group))
        return True

    def send(self, part: PartitionCopy, fetching: Fetching, batch: SourceBatch) -> bool:
        """Queue `batch` for the target, as it is or re-encoded; False when the partition stops in it (a record
        the target refuses, or a refusal an earlier task committed whose retry is not due yet)."""
        limit = part.work.max_record_bytes
        held = part.held_at is not None and batch.last_offset >= part.held_at
        one_by_one = batch.base_offset <= fetching.one_by_one_until
        reason = why_reencoded(batch, PartitionState.of(part, fetching))
        self._count(part, batch)
        if reason is None:
            upstream = range(batch.base_offset, batch.last_offset + 1)
            self._queue(part, for_target(batch, -1, -1, -1), upstream, batch.max_timestamp)
            part.forwarded += batch.count
            return True
        part.reencoded_reason = reason
        records = records_of(batch, fetching.position)
        if held:
            assert part.held_at is not None
            records = [record for record in records if record.offset < part.held_at]
        if not one_by_one and records:
            encoded = encode_records(records, batch.compression)
            if limit is None or len(encoded) <= limit:
                self._queue(part, encoded, [r.offset for r in records], _newest(records))
                records = []
        for record in records:  # one per batch: the batch is too large, or the target refused it as a whole
            encoded = encode_records([record], batch.compression)
            if limit is not None and len(encoded) > limit:
                size, where = len(encoded), part.work.remote_topic
                part.refuse(
                    record.offset, f"record of {size} bytes is larger than max.message.bytes={limit} of {where}"
                )
                self.stop_at(part, fetching, record.offset)
                return False
            self._queue(part, encoded, [record.offset], _newest([record]))
        if held:
            assert part.held_at is not None
            self.stop_at(part, fetching, part.held_at)
            return False
        return True

    def stop_at(self, part: PartitionCopy, fetching: Fetching, offset: int) -> None:
        """The partition stops at `offset` (refused, corrupt): held, fetched from there once released."""
        self._hold(part)
        fetching.position = offset

    def _count(self, part: PartitionCopy, batch: SourceBatch) -> None:
        part.records += batch.count
        part.bytes += max(len(batch.raw) - RECORD_BATCH_OVERHEAD, 0)
        self.records += batch.count
        if batch.max_timestamp < 0:
            return  # message format v0: no timestamps, no age
        age = self.clock.now_ms - batch.max_timestamp
        part.age_ms_sum += age * batch.count
        if age > part.age_ms_max:
            part.age_ms_max = age

    def _queue(self, part: PartitionCopy, payload: TargetBatch, upstream: Sequence[int], newest_ms: float) -> None:
        part.in_flight.append(upstream[0])
        note = (part, upstream, newest_ms)
        self._producer().send(OutgoingBatch(part.work.remote_key, payload, len(upstream), note))
