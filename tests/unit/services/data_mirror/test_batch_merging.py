"""Batch forwarding merges a fetch's run of small batches into one (a producer's backlog of tiny batches would
otherwise go at five batches per round trip), and a run of uncompressed batches two of which fit the target's
batch.size (a partition's short backlog lands in one append): the records, their order and their offsets stay
exact, and what cannot be merged (a large batch, a gap, another codec, the target's size limit) travels as before."""

from __future__ import annotations

import asyncio
from typing import Any

from aiokafka.record.default_records import DefaultRecordBatch

from services.data_mirror.forwarding import SMALL_BATCH_BYTES, SMALL_BATCH_RECORDS
from tests.unit.services.data_mirror.fake_batch_link import (
    KEY,
    REMOTE,
    FakeSource,
    FakeTarget,
    batch_spec,
    open_copier,
    steps_until,
)
from tests.unit.shared.kafka.test_record_batches import LZ4
from tests.unit.shared.kafka.test_record_batches import _batch as stored_batch


def forward(
    fetched: bytes, *, max_record_bytes: int | None = 1_000_000, batch_size: int | None = None
) -> tuple[list[bytes], int]:
    """A batch-forwarding copy of partition 0 from offset 0, whose first fetch brings `fetched`: the batches the
    target wrote, in order, and where the copier reads next once the target acknowledged every record."""
    producer = {} if batch_size is None else {"batch.size": str(batch_size)}
    spec = batch_spec(max_record_bytes=max_record_bytes, target_producer=producer)
    source, target = FakeSource({KEY: fetched}), FakeTarget()

    async def copy() -> int:
        copier = await open_copier(spec, source, target)
        last = source.log_of(KEY).end - 1
        await steps_until(copier, lambda: copier.parts[KEY].acked == last, 200)
        position = copier.positions()[KEY].next_offset
        await copier.close()
        assert position is not None
        return position

    position = asyncio.run(copy())
    return target.log(REMOTE, 0).batches, position


def records(batch: bytes) -> list[tuple[Any, ...]]:
    return [(r.key, r.value, r.timestamp, list(r.headers)) for r in DefaultRecordBatch(batch)]


def upstream(batch: bytes) -> list[int]:
    """The source offsets of a written batch's records (each record's key names its offset)."""
    return [int(bytes(r.key or b"")[1:]) for r in DefaultRecordBatch(batch)]


def source_records(*stored: bytes) -> list[tuple[Any, ...]]:
    return [(r.key, r.value, r.timestamp, list(r.headers)) for raw in stored for r in DefaultRecordBatch(raw)]


def test_a_run_of_small_batches_goes_as_one_batch_with_every_record_and_offset_exact() -> None:
    stored = [stored_batch(base, 5) for base in range(0, 50, 5)]
    sent, position = forward(b"".join(stored))
    assert len(sent) == 1
    assert records(sent[0]) == source_records(*stored)
    assert upstream(sent[0]) == list(range(50))
    assert position == 50


def test_compressed_small_batches_merge_in_their_codec() -> None:
    stored = [stored_batch(base, 3, compression=LZ4) for base in range(0, 30, 3)]
    sent, _ = forward(b"".join(stored))
    assert len(sent) == 1
    assert DefaultRecordBatch(sent[0]).compression_type == LZ4
    assert records(sent[0]) == source_records(*stored)


def test_batches_of_few_large_records_go_as_they_are() -> None:
    """A 16 KiB batch of 1 KiB records costs less forwarded than re-encoded, even with few records, when the target's
    batch.size (16 KiB, Kafka's Java default, set by the flow) would not hold two of them."""
    stored = [stored_batch(base, 16, value_size=1024) for base in range(0, 48, 16)]
    assert all(len(raw) >= SMALL_BATCH_BYTES for raw in stored)
    sent, _ = forward(b"".join(stored), batch_size=16_384)
    assert [upstream(batch) for batch in sent] == [list(range(base, base + 16)) for base in range(0, 48, 16)]


def test_large_batches_gaps_and_other_codecs_are_not_merged_across() -> None:
    large = SMALL_BATCH_RECORDS
    stored = [
        stored_batch(0, 2),
        stored_batch(2, 2),
        stored_batch(4, large, value_size=200),  # large: many records, more than half of a 16 KiB batch.size
        stored_batch(4 + large, 2),
        stored_batch(10 + large, 2),  # after a gap (a marker, aborted data): its own run
        stored_batch(12 + large, 2),
        stored_batch(14 + large, 2, compression=LZ4),  # another codec
    ]
    sent, position = forward(b"".join(stored), batch_size=16_384)
    assert [upstream(batch) for batch in sent] == [
        [0, 1, 2, 3],
        list(range(4, 4 + large)),
        [4 + large, 5 + large],
        list(range(10 + large, 14 + large)),
        [14 + large, 15 + large],
    ]
    assert [record for batch in sent for record in records(batch)] == source_records(*stored)
    assert position == 16 + large


def test_merged_batches_stay_within_the_targets_max_message_bytes() -> None:
    stored = [stored_batch(base, 4) for base in range(0, 80, 4)]
    limit = 3 * len(stored[0])
    sent, _ = forward(b"".join(stored), max_record_bytes=limit)
    assert len(sent) > 1
    assert all(len(batch) <= limit for batch in sent)
    assert [offset for batch in sent for offset in upstream(batch)] == list(range(80))
    assert [record for batch in sent for record in records(batch)] == source_records(*stored)


def test_uncompressed_batches_two_of_which_fit_the_targets_batch_size_go_as_one() -> None:
    """A partition's short backlog in 16 KiB batches, batch.size 256 KiB: one batch, one append on the target."""
    stored = [stored_batch(base, 16, value_size=1024) for base in range(0, 64, 16)]
    sent, position = forward(b"".join(stored), batch_size=256 * 1024)
    assert [upstream(batch) for batch in sent] == [list(range(64))]
    assert records(sent[0]) == source_records(*stored)
    assert position == 64


def test_batches_too_large_to_pair_within_batch_size_and_compressed_ones_go_as_they_are() -> None:
    batch_size = 40 * 1024
    stored = [stored_batch(base, 24, value_size=1024) for base in range(0, 72, 24)]  # ~24 KiB: two do not fit
    stored += [stored_batch(base, 64, value_size=1024, compression=LZ4) for base in range(72, 200, 64)]
    sent, _ = forward(b"".join(stored), batch_size=batch_size)
    assert [upstream(batch) for batch in sent] == [
        list(range(0, 24)),
        list(range(24, 48)),
        list(range(48, 72)),
        list(range(72, 136)),
        list(range(136, 200)),
    ]
    assert [record for batch in sent for record in records(batch)] == source_records(*stored)
