"""Can a fetched batch go to the target as it is? The one home of that decision: forward, merge or re-encode.

A batch goes as it is when its own format allows (`SourceBatch.why_not_forwardable`: message format v2, no gap,
create-time timestamps, from the position on) and the partition's state does too: no refused record inside it, not
in a range that is copied record by record after a refusal, not larger than the target's max.message.bytes.
Several small batches that follow each other without a gap, in one codec, are merged into one re-encoded batch
(five batches per round trip would cap a backlog of tiny ones), and so are uncompressed batches two of which fit
the target producer's batch.size (a short backlog lands in one append).
"""

from __future__ import annotations

from dataclasses import dataclass

from services.data_mirror.epoch_checks import Fetching
from services.data_mirror.partition_copy import PartitionCopy
from shared.kafka.record_batches import SourceBatch

# Small: few records and few bytes, so the round trip and the per-batch work outweigh re-encoding its records.
SMALL_BATCH_RECORDS = 64
SMALL_BATCH_BYTES = 8 * 1024
MERGED_BATCH_BYTES = 256 * 1024


@dataclass(frozen=True, slots=True)
class PartitionState:
    """What of a partition's copy the decision depends on."""

    position: int  # where fetching stands: a batch starting before it goes from the position on, re-encoded
    one_by_one_until: int = -1  # after a refusal, records up to here go one per batch
    held_at: int | None = None  # a refused record the partition stops at
    max_record_bytes: int | None = None  # the remote topic's max.message.bytes, when known

    @classmethod
    def of(cls, part: PartitionCopy, fetching: Fetching) -> PartitionState:
        return cls(fetching.position, fetching.one_by_one_until, part.held_at, part.work.max_record_bytes)


def why_reencoded(batch: SourceBatch, state: PartitionState) -> str | None:
    """None when `batch` is forwarded as it is; otherwise why it is re-encoded (or goes record by record)."""
    reason = batch.why_not_forwardable(state.position)
    if reason is None and state.held_at is not None and batch.last_offset >= state.held_at:
        reason = "stops at a refused record"
    if reason is None and batch.base_offset <= state.one_by_one_until:
        reason = "after a refusal, record by record"
    limit = state.max_record_bytes
    if reason is None and limit is not None and len(batch.raw) > limit:
        reason = f"batch of {len(batch.raw)} bytes is larger than max.message.bytes={limit}"
    return reason


def mergeable(batch: SourceBatch, state: PartitionState, pairs_below: int) -> bool:
    """A batch that could be forwarded as it is, small (few records and bytes) or uncompressed and at most
    `pairs_below` bytes: merging it with its neighbours keeps offsets exact."""
    small = batch.count < SMALL_BATCH_RECORDS and len(batch.raw) < SMALL_BATCH_BYTES
    fits_twice = batch.compression == 0 and len(batch.raw) <= pairs_below
    return (small or fits_twice) and why_reencoded(batch, state) is None


def groups(batches: list[SourceBatch], state: PartitionState, target_batch_bytes: int) -> list[list[SourceBatch]]:
    """`batches` in order, mergeable ones that follow each other without a gap in groups to merge; the rest alone
    (each of those forwarded or re-encoded as `why_reencoded` says)."""
    limit = min(state.max_record_bytes or MERGED_BATCH_BYTES, MERGED_BATCH_BYTES)
    pairs_below = min(limit, target_batch_bytes) // 2  # uncompressed batches two of which fit batch.size
    found: list[list[SourceBatch]] = []
    size, merging = 0, False
    for batch in batches:
        small = mergeable(batch, state, pairs_below)
        last = found[-1][-1] if found else None
        if (
            merging
            and small
            and last is not None
            and batch.base_offset == last.next_offset
            and batch.compression == last.compression
            and size + len(batch.raw) <= limit
        ):
            found[-1].append(batch)
            size += len(batch.raw)
        else:
            found.append([batch])
            size, merging = len(batch.raw), small
    return found
