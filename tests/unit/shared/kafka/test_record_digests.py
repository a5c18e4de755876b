"""Record batches as the verifier compares them: digests, forwarded copies told from their bytes, and the alignment
of real batches (a forwarded copy verified without reading it; a changed record, a merged batch read record by
record and found exactly)."""

from __future__ import annotations

import struct
from collections.abc import Sequence

from aiokafka.record.default_records import DefaultRecordBatchBuilder

from shared.kafka.byte_headers import write_batch
from shared.kafka.record_batches import SourceBatch, encode_records, for_target, read_batches, records_of
from shared.kafka.record_digests import BatchBlock, ReadCounter, digest_batch, same_records
from shared.verify.align import Alignment, Frame, align
from shared.verify.findings import AlteredRecord

Record = tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]  # key, value, headers


def _records(first: int, count: int) -> list[Record]:
    return [(f"k{i}".encode(), f"value-{i}".encode(), [("h", b"x"), ("n", None)]) for i in range(first, first + count)]


def _stored(base: int, records: Sequence[Record], *, compression: int = 0, first_ts: int = 1_000) -> SourceBatch:
    """A v2 batch at offset `base` as a broker stores it (one millisecond between records)."""
    builder = DefaultRecordBatchBuilder(2, compression, 0, 42, 1, 0, 1 << 20)
    for delta, (key, value, headers) in enumerate(records):
        builder.append(delta, first_ts + delta, key, value, headers)
    return _at(base, builder.build())


def _at(base: int, encoded: bytes | bytearray) -> SourceBatch:
    """`encoded` as a log holds it at `base` (the base offset is not under the CRC)."""
    raw = bytearray(encoded)
    struct.pack_into(">q", raw, 0, base)
    (batch,) = read_batches(bytes(raw))
    return batch


def _forwarded(batch: SourceBatch, base: int) -> SourceBatch:
    """What batch forwarding makes of `batch` on the target, at target offset `base`."""
    return _at(base, bytes(for_target(batch, 7, 0, 0)))


def _block(batch: SourceBatch, counter: ReadCounter, start: int = 0, end: int = 10**9) -> BatchBlock:
    return BatchBlock(batch, start, end, counter)


def test_a_forwarded_copy_holds_the_same_records_and_a_re_encoded_one_is_told_only_by_its_digests() -> None:
    source = _stored(100, _records(0, 5))
    forwarded = _forwarded(source, 0)
    assert same_records(forwarded, source)
    assert digest_batch(forwarded, 0, 5).digests == digest_batch(source, 100, 105).digests

    merged = _at(0, bytes(encode_records(records_of(_stored(95, _records(0, 5))) + records_of(source), 0)))
    copied = records_of(merged, 5)  # the same records, in a batch of other bytes (offset and timestamp deltas)
    assert [(r.key, r.value, r.timestamp) for r in copied] == [
        (r.key, r.value, r.timestamp) for r in records_of(source)
    ]
    assert not same_records(merged, source)
    assert digest_batch(merged, 5, 10).digests == digest_batch(source, 100, 105).digests

    lz4 = _stored(100, _records(0, 5), compression=3)
    assert not same_records(lz4, source)
    assert same_records(_forwarded(lz4, 9), lz4)


def test_records_equal_but_for_their_timestamps_are_not_the_same_records() -> None:
    source = _stored(0, _records(0, 3), first_ts=1_000)
    later = _stored(0, _records(0, 3), first_ts=2_000)  # same deltas, so the same record bytes
    assert source.raw[61:].tobytes() == later.raw[61:].tobytes()
    assert not same_records(later, source)
    assert set(digest_batch(later, 0, 3).digests).isdisjoint(digest_batch(source, 0, 3).digests)


def test_digests_and_bytes_cover_only_the_range_asked() -> None:
    batch = _stored(10, _records(0, 6))
    whole = digest_batch(batch, 0, 100)
    part = digest_batch(batch, 12, 15)
    assert list(whole.offsets) == list(range(10, 16))
    assert (list(part.offsets), part.digests) == ([12, 13, 14], whole.digests[2:5])
    assert part.bytes == sum(len(b"k2") + len(b"value-2") + len(b"x") for _ in range(3))
    assert whole.bytes == sum(len(f"k{i}") + len(f"value-{i}") + 1 for i in range(6))


def test_a_header_key_that_is_not_utf8_digests_as_unreadable_headers_and_the_rest_is_still_compared() -> None:
    def batch(headers: list[tuple[str | bytes, bytes | None]], value: bytes = b"v") -> SourceBatch:
        return _at(0, write_batch([(1_000, b"k", value, headers), (1_001, b"k2", b"w", [("h", b"x")])], 0))

    odd = digest_batch(batch([(b"\xff", b"x")]), 0, 2)
    assert odd.digests == digest_batch(batch([(b"\xfe", b"other")]), 0, 2).digests  # unreadable either way
    assert odd.digests[0] != digest_batch(batch([(b"\xff", b"x")], value=b"changed"), 0, 2).digests[0]
    assert odd.digests[1] == digest_batch(_stored(0, [(b"k", b"v", []), (b"k2", b"w", [("h", b"x")])]), 0, 2).digests[1]


def _verify(source: list[SourceBatch], target: list[SourceBatch], end: int) -> tuple[Alignment, ReadCounter]:
    counter = ReadCounter()
    found = align(
        [_block(batch, ReadCounter()) for batch in source],
        [_block(batch, counter) for batch in target],
        Frame(log_start=0, source_from=0, source_to=end, copied_to=end),
    )
    return found, counter


def test_forwarded_batches_are_verified_without_reading_the_targets_records(digested: list[int]) -> None:
    source = [_stored(0, _records(0, 40)), _stored(40, _records(40, 25)), _stored(65, _records(65, 35))]
    target = [_forwarded(batch, 1_000 + batch.base_offset) for batch in source]
    found, counter = _verify(source, target, 100)
    assert (found.verified, found.missing.records, found.altered_records, found.unexpected) == (100, 0, 0, 0)
    assert digested == [0, 40, 65], "only the source's batches are read (their digests go to the replay window)"
    assert (counter.records, counter.bytes) == (100, sum(len(f"k{i}value-{i}x") for i in range(100)))


def test_one_changed_record_in_a_copied_batch_is_altered_at_its_exact_offsets(digested: list[int]) -> None:
    source = [_stored(0, _records(0, 40)), _stored(40, _records(40, 25)), _stored(65, _records(65, 35))]
    changed = _records(40, 25)
    changed[13] = (changed[13][0], b"changed on the target", changed[13][2])
    target = [_forwarded(source[0], 500), _forwarded(_stored(40, changed), 540), _forwarded(source[2], 565)]
    found, _ = _verify(source, target, 100)
    assert (found.verified, found.altered_records, found.missing.records, found.duplicates) == (99, 1, 0, 0)
    assert found.altered == [AlteredRecord(53, 553)]
    # The changed batch is read on both sides. The changed record's copy was looked for in the source ahead (up to
    # the read-ahead window): the records read ahead are then matched one by one, so the last batch is read too.
    assert digested == [0, 40, 540, 65, 565]


def test_a_merged_target_batch_is_read_record_by_record_and_the_next_forwarded_one_in_bulk_again(
    digested: list[int],
) -> None:
    small = [_stored(base, _records(base, 10)) for base in (0, 10, 20)]
    large = _stored(30, _records(30, 70))
    merged = _at(0, bytes(encode_records([r for batch in small for r in records_of(batch)], 0)))
    found, counter = _verify([*small, large], [merged, _forwarded(large, 30)], 100)
    assert (found.verified, found.missing.records, found.altered_records, found.unexpected) == (100, 0, 0, 0)
    assert digested == [0, 0, 10, 20, 30]  # the merged batch (target offset 0) is read; the forwarded one is not
    assert counter.records == 100


def test_a_merged_batch_missing_a_record_names_it() -> None:
    small = [_stored(base, _records(base, 10)) for base in (0, 10)]
    records = [r for batch in small for r in records_of(batch) if r.offset != 14]
    found, _ = _verify(small, [_at(0, bytes(encode_records(records, 0)))], 20)
    assert (found.verified, found.missing.finish()[0].first, found.missing.records) == (19, 14, 1)
