"""Can a fetched batch go to the target as it is? The one home of that decision: forward, merge or re-encode.

A batch goes as it is when its own format allows (`SourceBatch.why_not_forwardable`: message format v2, no gap,
create-time timestamps, from the position on), the partition's state does too (no refused record inside it, not
in a range that is copied record by record after a refusal, not larger than the target's max.message.bytes) and the
flow leaves its records as they are. What the flow's transforms and provenance do to a partition is decided once
(`shared/reshape/effect.py`): nothing (its batches are never decoded), everything dropped (nothing is decoded or
sent), or a batch's records must go through the chain, after which a batch none of whose records changed still goes
as it is.
Several small batches that follow each other without a gap, in one codec, are merged into one re-encoded batch
(five batches per round trip would cap a backlog of tiny ones), and so are uncompressed batches two of which fit
the target producer's batch.size (a short backlog lands in one append).
"""

from __future__ import annotations

from dataclasses import dataclass

from services.data_mirror.epoch_checks import Fetching
from services.data_mirror.partition_copy import PartitionCopy
from shared.kafka.record_batches import SourceBatch
from shared.reshape.effect import ChainEffect

# Small: few records and few bytes, so the round trip and the per-batch work outweigh re-encoding its records.
SMALL_BATCH_RECORDS = 64
SMALL_BATCH_BYTES = 8 * 1024
MERGED_BATCH_BYTES = 256 * 1024


CHANGED = "records changed or dropped by the flow's transforms or provenance"


@dataclass(frozen=True, slots=True)
class PartitionState:
    """What of a partition's copy the decision depends on."""

    position: int  # where fetching stands: a batch starting before it goes from the position on, re-encoded
    one_by_one_until: int = -1  # after a refusal, records up to here go one per batch
    held_at: int | None = None  # a refused record the partition stops at
    max_record_bytes: int | None = None  # the remote topic's max.message.bytes, when known
    effect: ChainEffect = ChainEffect.NONE  # what the flow's transforms and provenance do to its batches

    @classmethod
    def of(cls, part: PartitionCopy, fetching: Fetching, effect: ChainEffect = ChainEffect.NONE) -> PartitionState:
        return cls(fetching.position, fetching.one_by_one_until, part.held_at, part.work.max_record_bytes, effect)


def why_reencoded(batch: SourceBatch, state: PartitionState, *, changed: bool = False) -> str | None:
    """None when `batch` is forwarded as it is; otherwise why it is re-encoded (or goes record by record).
    `changed`: the flow's chain changed or dropped a record of it (asked once its records went through it, where
    `state.effect` is READS)."""
    reason = batch.why_not_forwardable(state.position)
    if reason is None and state.held_at is not None and batch.last_offset >= state.held_at:
        reason = "stops at a refused record"
    if reason is None and batch.base_offset <= state.one_by_one_until:
        reason = "after a refusal, record by record"
    limit = state.max_record_bytes
    if reason is None and limit is not None and len(batch.raw) > limit:
        reason = f"batch of {len(batch.raw)} bytes is larger than max.message.bytes={limit}"
    if reason is None and changed:
        reason = CHANGED
    return reason


def mergeable(batch: SourceBatch, state: PartitionState, pairs_below: int) -> bool:
    """A batch that could be forwarded as it is, small (few records and bytes) or uncompressed and at most
    `pairs_below` bytes: merging it with its neighbours keeps offsets exact."""
    small = batch.count < SMALL_BATCH_RECORDS and len(batch.raw) < SMALL_BATCH_BYTES
    fits_twice = batch.compression == 0 and len(batch.raw) <= pairs_below
    dropped = state.effect is ChainEffect.DROPS_ALL  # each goes alone, unread
    return (small or fits_twice) and not dropped and why_reencoded(batch, state) is None


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
