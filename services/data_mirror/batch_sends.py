"""Queues a partition's fetched batches for the target: as they are, merged, or re-encoded (`forwarding` decides).

Where the flow changes records (transforms, provenance headers), a batch's records are decoded once and go through
`reshape` first: a batch none of whose records changed still goes as it is; otherwise the records kept are
re-encoded into one batch, each beside its source offset, and a record a transform failed on stops its partition
as a refused record does. A batch the target cannot take whole (larger than max.message.bytes, refused as a batch)
goes record by record, and a record too large on its own stops its partition as the record path's refusal does
(`PartitionCopy.refuse`). The target gives a forwarded batch's records consecutive offsets, so a run of them keeps
one offset sync exact; a re-encoded batch's records carry their source offsets to the syncs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from services.data_mirror.epoch_checks import Fetching
from services.data_mirror.forwarding import CHANGED, PartitionState, why_reencoded
from services.data_mirror.partition_copy import Clock, PartitionCopy
from services.data_mirror.record_size import RECORD_BATCH_OVERHEAD
from shared.kafka.batch_producer import BatchProducer
from shared.kafka.outgoing_batches import OutgoingBatch
from shared.kafka.record_batches import (
    RecordFields,
    SourceBatch,
    TargetBatch,
    encode_records,
    for_target,
    records_of,
)
from shared.reshape.effect import ChainEffect
from shared.reshape.reshaper import Reshaper
from shared.reshape.transforms import Chained


def _newest(records: Sequence[RecordFields]) -> int:
    """The newest timestamp of `records` (-1 when none has one: message format v0)."""
    return max((record.timestamp for record in records if record.timestamp is not None), default=-1)


class BatchSends:
    """What the copier sends for each fetched batch; `records` counts the records taken from the source."""

    def __init__(
        self,
        producer: Callable[[], BatchProducer],
        clock: Clock,
        hold: Callable[[PartitionCopy], None],
        reshaper: Reshaper,
    ) -> None:
        self._producer = producer
        self._hold = hold
        self._reshaper = reshaper
        self.clock = clock
        self.records = 0

    def state(self, part: PartitionCopy, fetching: Fetching) -> PartitionState:
        """What `forwarding` decides a batch of `part` by."""
        effect = self._reshaper.effect(part.work) if self._reshaper else ChainEffect.NONE
        return PartitionState.of(part, fetching, effect)

    def merge(self, part: PartitionCopy, fetching: Fetching, group: list[SourceBatch]) -> bool:
        """Send consecutive small batches as one, re-encoded in their codec (one by one if too large for the target)."""
        records = [record for batch in group for record in records_of(batch)]
        offsets = [record.offset for record in records]
        if self.state(part, fetching).effect is ChainEffect.READS:
            chained = self._reshaper.batch(part, records, offsets)
            if chained.changed:
                part.reencoded_reason = CHANGED
            self._count(part, group, len(chained.records))
            return self._reencoded(part, fetching, chained, group[0].compression, one_by_one=False)
        encoded = encode_records(records, group[0].compression)
        limit = part.work.max_record_bytes
        if limit is not None and len(encoded) > limit:
            return all(self.send(part, fetching, batch) for batch in group)
        self._count(part, group, sum(batch.count for batch in group))
        upstream = range(group[0].base_offset, group[-1].last_offset + 1)
        self._queue(part, encoded, upstream, max(batch.max_timestamp for batch in group))
        return True

    def send(self, part: PartitionCopy, fetching: Fetching, batch: SourceBatch) -> bool:
        """Queue `batch` for the target, as it is or re-encoded; False when the partition stops in it (a record
        the target refuses, a transform fails on, or a refusal an earlier task committed whose retry is not due
        yet)."""
        state = self.state(part, fetching)
        held = part.held_at is not None and batch.last_offset >= part.held_at
        if state.effect is ChainEffect.DROPS_ALL:
            return self._dropped(part, fetching, batch)
        reason = why_reencoded(batch, state)
        if reason is None and state.effect is ChainEffect.NONE:
            self._forward(part, batch)
            return True
        records = records_of(batch, fetching.position)
        if held:
            assert part.held_at is not None
            records = [record for record in records if record.offset < part.held_at]
        offsets = [record.offset for record in records]
        if state.effect is ChainEffect.READS:
            chained = self._reshaper.batch(part, records, offsets)
            reason = why_reencoded(batch, state, changed=chained.changed)
            if reason is None:
                self._forward(part, batch)
                return True
        else:
            chained = Chained(records, offsets, changed=False)
        part.reencoded_reason = reason
        self._count(part, [batch], len(chained.records))
        one_by_one = batch.base_offset <= fetching.one_by_one_until
        if not self._reencoded(part, fetching, chained, batch.compression, one_by_one=one_by_one):
            return False
        if held:
            assert part.held_at is not None
            self.stop_at(part, fetching, part.held_at)
            return False
        return True

    def stop_at(self, part: PartitionCopy, fetching: Fetching, offset: int) -> None:
        """The partition stops at `offset` (refused, corrupt): held, fetched from there once released."""
        self._hold(part)
        fetching.position = offset

    def _forward(self, part: PartitionCopy, batch: SourceBatch) -> None:
        self._count(part, [batch], batch.count)
        upstream = range(batch.base_offset, batch.last_offset + 1)
        self._queue(part, for_target(batch, -1, -1, -1), upstream, batch.max_timestamp)
        part.forwarded += batch.count

    def _dropped(self, part: PartitionCopy, fetching: Fetching, batch: SourceBatch) -> bool:
        """Every record of the batch from the position on is dropped by the flow's Filter: none is read or sent."""
        self.records += batch.count
        end = batch.next_offset if part.held_at is None else min(batch.next_offset, part.held_at)
        part.dropped += min(batch.count, max(end - max(batch.base_offset, fetching.position), 0))
        if part.held_at is not None and batch.last_offset >= part.held_at:
            self.stop_at(part, fetching, part.held_at)  # an earlier task's refusal: it waits there for its retry
            return False
        return True

    def _reencoded(
        self, part: PartitionCopy, fetching: Fetching, chained: Chained, compression: int, *, one_by_one: bool
    ) -> bool:
        """Queue the records kept, in one batch when it fits the target (else one per batch, or when `one_by_one`);
        False when the partition stops at one: too large for the target, or a transform failed on it."""
        records, offsets = chained.records, chained.offsets
        limit = part.work.max_record_bytes
        if not one_by_one and records:
            encoded = encode_records(records, compression)
            if limit is None or len(encoded) <= limit:
                self._queue(part, encoded, offsets, _newest(records))
                records, offsets = [], []
        for record, offset in zip(records, offsets, strict=True):
            encoded = encode_records([record], compression)
            if limit is not None and len(encoded) > limit:
                size, where = len(encoded), part.work.remote_topic
                part.refuse(offset, f"record of {size} bytes is larger than max.message.bytes={limit} of {where}")
                self.stop_at(part, fetching, offset)
                return False
            self._queue(part, encoded, [offset], _newest([record]))
        if chained.failed_at is not None:
            part.refuse(chained.failed_at, chained.failure or "a transform failed")  # reported, retried later
            self.stop_at(part, fetching, chained.failed_at)
            return False
        return True

    def _count(self, part: PartitionCopy, batches: Sequence[SourceBatch], copied: int) -> None:
        """`batches` taken from the source, `copied` of their records sent (the others dropped by the flow)."""
        part.records += copied
        taken = sum(batch.count for batch in batches)
        share = copied / taken if taken else 0.0  # of each batch's records, for their average age
        for batch in batches:
            part.bytes += max(len(batch.raw) - RECORD_BATCH_OVERHEAD, 0)
            self.records += batch.count
            if batch.max_timestamp < 0:
                continue  # message format v0: no timestamps, no age
            age = self.clock.now_ms - batch.max_timestamp
            part.age_ms_sum += age * batch.count * share
            if age > part.age_ms_max:
                part.age_ms_max = age

    def _queue(self, part: PartitionCopy, payload: TargetBatch, upstream: Sequence[int], newest_ms: float) -> None:
        part.in_flight.append(upstream[0])
        note: Any = (part, upstream, newest_ms)
        self._producer().send(OutgoingBatch(part.work.remote_key, payload, len(upstream), note))
