"""Record batches read from fetch bytes, rewritten for the target, filtered read_committed, re-encoded.

The byte examples are made with aiokafka's own batch builder (the encoder Kafka clients use) and checked with
its reader, so a field written at the wrong place or a wrong CRC shows as a decoding difference.
"""

from __future__ import annotations

import struct

from aiokafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from aiokafka.record.legacy_records import LegacyRecordBatchBuilder
from aiokafka.record.util import calc_crc32c

from shared.kafka.record_batches import (
    CommittedFilter,
    SourceBatch,
    encode_records,
    for_target,
    read_batches,
    records_of,
)

LZ4 = 3
HEADER = 61


def _batch(
    base: int,
    count: int,
    *,
    producer: int = -1,
    transactional: bool = False,
    compression: int = 0,
    offsets: list[int] | None = None,
    log_append_time: int | None = None,
    value_size: int = 20,
) -> bytes:
    """A v2 batch at `base` as a broker stores it (`offsets`: inner offset deltas, gaps for a compacted one)."""
    builder = DefaultRecordBatchBuilder(
        2, compression, int(transactional), producer, 3 if producer >= 0 else -1, 7, 1 << 20
    )
    for index, delta in enumerate(offsets or range(count)):
        builder.append(delta, 1_000 + index, f"k{base + delta}".encode(), b"v" * value_size, [("h", b"x"), ("n", None)])
    raw = bytearray(builder.build())
    struct.pack_into(">q", raw, 0, base)
    if log_append_time is not None:
        attributes = struct.unpack_from(">h", raw, 21)[0] | 0x08
        struct.pack_into(">h", raw, 21, attributes)
        struct.pack_into(">q", raw, 35, log_append_time)
    struct.pack_into(">I", raw, 17, calc_crc32c(bytes(raw[21:])))
    return bytes(raw)


def _marker(offset: int, producer: int, *, abort: bool) -> bytes:
    """A transaction marker: a control batch whose one record's key is (version 0, type 0 abort / 1 commit)."""
    builder = DefaultRecordBatchBuilder(2, 0, 1, producer, 3, -1, 1 << 20)
    builder.append(0, 5_000, struct.pack(">hh", 0, 0 if abort else 1), struct.pack(">hi", 0, 0), [])
    raw = bytearray(builder.build())
    struct.pack_into(">q", raw, 0, offset)
    struct.pack_into(">h", raw, 21, struct.unpack_from(">h", raw, 21)[0] | 0x20)
    struct.pack_into(">I", raw, 17, calc_crc32c(bytes(raw[21:])))
    return bytes(raw)


def _keys(batch: bytes | bytearray) -> list[bytes | None]:
    return [record.key for record in DefaultRecordBatch(bytes(batch))]


def test_a_fetch_response_splits_into_whole_batches_and_leaves_a_truncated_last_one() -> None:
    first, second = _batch(100, 3), _batch(103, 2, compression=LZ4)
    batches = read_batches(first + second + second[:40])
    assert [(b.base_offset, b.last_offset, b.count, b.compression) for b in batches] == [
        (100, 102, 3, 0),
        (103, 104, 2, LZ4),
    ]
    assert bytes(batches[0].raw) == first
    assert read_batches(b"") == []


def test_a_batch_for_the_target_has_offset_zero_our_producer_a_valid_crc_and_the_same_records() -> None:
    source = _batch(4_000, 5, producer=912, transactional=True, compression=LZ4)
    (batch,) = read_batches(source)
    out = for_target(batch, 77, 2, 1_000)
    decoded = DefaultRecordBatch(bytes(out))
    assert decoded.validate_crc()
    assert (decoded.base_offset, decoded.producer_id, decoded.producer_epoch, decoded.base_sequence) == (
        0,
        77,
        2,
        1_000,
    )
    assert not decoded.is_transactional
    assert decoded.compression_type == LZ4
    assert bytes(out)[HEADER:] == source[HEADER:]  # the records themselves, still compressed, are untouched
    original = [(r.offset - 4_000, r.timestamp, r.key, r.value, r.headers) for r in DefaultRecordBatch(source)]
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in DefaultRecordBatch(bytes(out))] == original


def test_read_committed_drops_aborted_transactions_and_markers_and_keeps_committed_ones() -> None:
    fetched = (
        _batch(0, 2)  # not transactional
        + _batch(2, 2, producer=5, transactional=True)  # aborted below
        + _batch(4, 1, producer=6, transactional=True)  # committed below
        + _marker(5, 5, abort=True)
        + _marker(6, 6, abort=False)
        + _batch(7, 2, producer=5, transactional=True)  # producer 5 again, committed: kept
        + _marker(9, 5, abort=False)
    )
    kept = CommittedFilter([(5, 2)]).committed(read_batches(fetched))
    assert [(b.base_offset, b.count) for b in kept] == [(0, 2), (4, 1), (7, 2)]


def test_without_aborted_transactions_only_markers_are_dropped() -> None:
    fetched = _batch(0, 2, producer=5, transactional=True) + _marker(2, 5, abort=False)
    assert [b.base_offset for b in CommittedFilter([]).committed(read_batches(fetched))] == [0]


def test_what_cannot_go_as_it_is_says_why() -> None:
    plain, gaps, appended = (
        read_batches(_batch(10, 4))[0],
        read_batches(_batch(10, 4, offsets=[0, 1, 5, 9]))[0],
        read_batches(_batch(10, 2, log_append_time=9_999))[0],
    )
    assert plain.why_not_forwardable(10) is None
    assert plain.why_not_forwardable(12) == "starts before the position"
    assert gaps.why_not_forwardable(10) == "offset gaps (compacted)"
    assert appended.why_not_forwardable(10) == "log-append timestamps"
    cleaned = bytearray(_batch(10, 2))
    struct.pack_into(">h", cleaned, 21, struct.unpack_from(">h", cleaned, 21)[0] | 0x40)  # the cleaner's flag
    assert read_batches(bytes(cleaned))[0].why_not_forwardable(10) == "cleaned tombstones (a delete horizon)"
    legacy = LegacyRecordBatchBuilder(1, 0, 1 << 20)
    legacy.append(0, 1_000, b"k", b"v")
    (old,) = read_batches(bytes(legacy.build()))
    assert old.why_not_forwardable(0) == "message format v1"


def test_re_encoding_keeps_each_record_from_the_position_on_and_gives_log_append_time_as_consumers_see_it() -> None:
    (gaps,) = read_batches(_batch(10, 4, offsets=[0, 1, 5, 9], compression=LZ4))
    records = records_of(gaps, 11)
    assert [r.offset for r in records] == [11, 15, 19]
    out = encode_records(records, gaps.compression)
    decoded = DefaultRecordBatch(bytes(out))
    assert decoded.validate_crc()
    assert decoded.compression_type == LZ4
    assert [(r.offset, r.key, r.headers) for r in DefaultRecordBatch(bytes(out))] == [
        (0, b"k11", [("h", b"x"), ("n", None)]),
        (1, b"k15", [("h", b"x"), ("n", None)]),
        (2, b"k19", [("h", b"x"), ("n", None)]),
    ]
    (appended,) = read_batches(_batch(0, 2, log_append_time=9_999))
    assert [r.timestamp for r in records_of(appended)] == [9_999, 9_999]


def test_a_source_batch_reports_its_control_and_transaction_flags() -> None:
    (marker,) = read_batches(_marker(3, 8, abort=True))
    assert isinstance(marker, SourceBatch)
    assert marker.is_control
    assert marker.is_transactional
    assert marker.producer_id == 8


def test_a_batch_whose_bytes_do_not_match_its_crc_is_marked_corrupt_and_the_others_are_not() -> None:
    good, damaged = _batch(0, 3), bytearray(_batch(3, 3))
    damaged[-2] ^= 0x01  # one bit of the last record
    first, second = read_batches(good + bytes(damaged))
    assert first.corrupt is None
    assert second.corrupt is not None
    assert "CRC-32C" in second.corrupt


def test_a_header_key_that_is_not_utf8_is_read_and_re_encoded_with_its_bytes_intact() -> None:
    """Kafka allows any bytes as a header key (non-Java producers write such keys): a batch that must be
    re-encoded (merged, log-append time, compacted) keeps them, in any codec, instead of failing to decode."""
    stored = _batch(10, 3, offsets=[0, 1, 3])  # every record's headers: ("h", b"x"), ("n", None)
    raw = bytearray(stored.replace(b"\x02h\x02x", b"\x02\xff\x02x"))  # the key "h" becomes the byte 0xff
    struct.pack_into(">I", raw, 17, calc_crc32c(bytes(raw[21:])))
    (batch,) = read_batches(bytes(raw))
    records = records_of(batch, 11)
    assert [(r.offset, r.key, list(r.headers)) for r in records] == [
        (11, b"k11", [(b"\xff", b"x"), (b"n", None)]),
        (13, b"k13", [(b"\xff", b"x"), (b"n", None)]),
    ]
    for codec in (0, LZ4):
        (again,) = read_batches(bytes(encode_records(records, codec)))
        assert [(r.key, list(r.headers), r.timestamp) for r in records_of(again)] == [
            (r.key, list(r.headers), r.timestamp) for r in records
        ]
