"""Record batches as the verifier compares them: each record's digest, and whether two batches hold the same records.

A record's digest is Python's own hash of (key, value, timestamp, headers) (`record_digest`): computed in C, 64
bits, and the same for both clusters because one process reads both. A whole v2 batch is digested by aiokafka's C
record reader (a fifth of a microsecond per record, the same digest written out inline); a part of one, a batch with
a header key that is not UTF-8, or an old message format goes through `records_of`, record by record. Where the
verifier needs the records themselves (a flow's transforms run over them: `shared/verify/expected.py`), a block is
decoded once (`BatchBlock.records`) and digested from what was decoded.

Two batches hold the same records when the bytes after their headers are the same, in the same codec, with the
same first and max timestamps and the same timestamp type: what batch forwarding produces (`for_target` rewrites
only the header fields the target owns). Their records' keys, values, headers and timestamps are then equal
without reading them.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aiokafka.record.default_records import DefaultRecordBatch

from shared.kafka.record_batches import (
    COMPRESSION_MASK,
    DELETE_HORIZON_FLAG,
    HEADER_BYTES,
    LOG_APPEND_TIME_FLAG,
    DecodedRecord,
    SourceBatch,
    records_of,
)

# What a record's headers digest as when a header key is not UTF-8: the same on both sides, so key, value and
# timestamp are still compared (as confluent-kafka, which cannot read such a key, made the verifier do before).
UNREADABLE_HEADERS: tuple[tuple[str, bytes], ...] = (("<header key not UTF-8>", b""),)
_RECORD_FORMAT = COMPRESSION_MASK | LOG_APPEND_TIME_FLAG | DELETE_HORIZON_FLAG  # attributes that shape the records
_TIMESTAMPS = slice(27, 43)  # the batch header's first and max timestamps


@dataclass(frozen=True, slots=True)
class Digested:
    """The records of a batch within a range: offsets, digests in the same order, and bytes of keys, values and
    header values (what the verifier reports as read)."""

    offsets: Sequence[int]
    digests: list[int]
    bytes: int


def whole_and_plain(batch: SourceBatch) -> bool:
    """A v2 batch of consecutive offsets (no compaction gap) that is neither a control batch nor corrupt."""
    return (
        batch.magic >= 2
        and not batch.is_control
        and batch.corrupt is None
        and batch.count == batch.last_offset - batch.base_offset + 1
    )


def same_records(one: SourceBatch, other: SourceBatch) -> bool:
    """True when both hold the same records, told from their bytes (a forwarded copy and its source batch); False
    says nothing (a merged or re-encoded copy has other bytes for the same records)."""
    if not (whole_and_plain(one) and whole_and_plain(other)) or one.count != other.count:
        return False
    if one.attributes & _RECORD_FORMAT != other.attributes & _RECORD_FORMAT:
        return False
    first, second = one.raw, other.raw
    return (
        len(first) == len(second)
        and first[_TIMESTAMPS].tobytes() == second[_TIMESTAMPS].tobytes()
        and first[HEADER_BYTES:].tobytes() == second[HEADER_BYTES:].tobytes()
    )


def record_digest(record: Any) -> int:
    """The digest of one record (a decoded one, or a `MirrorRecord` a flow's transforms made): key, value,
    timestamp and headers."""
    return hash((record.key, record.value, record.timestamp, _readable(record.headers)))


def record_bytes(record: Any) -> int:
    """Bytes of a record's key, value and header values (what the verifier reports as read)."""
    return len(record.key or b"") + len(record.value or b"") + sum(len(value or b"") for _, value in record.headers)


def digest_batch(batch: SourceBatch, start: int, end: int) -> Digested:
    """The records of `batch` at offsets start..end-1."""
    if whole_and_plain(batch) and start <= batch.base_offset and batch.last_offset < end:
        try:
            return _digest_whole(batch)
        except UnicodeDecodeError:  # a header key that is not UTF-8: read by bytes below
            pass
    return _digest_records(_in_range(batch, start, end))


def _in_range(batch: SourceBatch, start: int, end: int) -> list[DecodedRecord]:
    return [record for record in records_of(batch, start) if record.offset < end]


def _digest_records(records: Sequence[DecodedRecord]) -> Digested:
    offsets = [record.offset for record in records]
    digests = [record_digest(record) for record in records]
    return Digested(offsets, digests, sum(record_bytes(record) for record in records))


def _digest_whole(batch: SourceBatch) -> Digested:
    """`record_digest` of every record, written out: the verifier's hot loop."""
    digests: list[int] = []
    append = digests.append
    size = 0
    for record in DefaultRecordBatch(batch.raw):
        key, value, headers = record.key, record.value, record.headers
        if headers:
            header_tuple = tuple(headers)
            size += sum(len(v or b"") for _, v in header_tuple)
        else:
            header_tuple = ()
        append(hash((key, value, record.timestamp, header_tuple)))
        size += (len(key) if key else 0) + (len(value) if value else 0)
    return Digested(range(batch.base_offset, batch.last_offset + 1), digests, size)


def _readable(headers: Sequence[tuple[str | bytes, bytes | None]]) -> tuple[tuple[str, bytes | None], ...]:
    """Headers with str keys; UNREADABLE_HEADERS if a key is not UTF-8 (`records_of` hands such keys as bytes)."""
    readable: list[tuple[str, bytes | None]] = []
    for name, value in headers:
        if isinstance(name, bytes):
            try:
                name = name.decode("utf-8")
            except UnicodeDecodeError:
                return UNREADABLE_HEADERS
        readable.append((name, value))
    return tuple(readable)


@dataclass
class ReadCounter:
    """Records and bytes (keys, values, header values) read for the comparison, over every partition."""

    records: int = 0
    bytes: int = 0


class BatchBlock:
    """One record batch's records at offsets start..end-1, as the alignment reads them (`shared.verify.blocks`):
    digested when first asked, and counted as read then; a copy of a source block known from its bytes never is."""

    __slots__ = ("_counter", "_digested", "_end", "_records", "_start", "batch")

    def __init__(self, batch: SourceBatch, start: int, end: int, counter: ReadCounter) -> None:
        self.batch = batch
        self._start, self._end = start, end
        self._counter = counter
        self._digested: Digested | None = None
        self._records: list[DecodedRecord] | None = None

    @property
    def whole(self) -> bool:
        """The whole batch is in the range, and it is a plain v2 batch (`whole_and_plain`)."""
        batch = self.batch
        return self._start <= batch.base_offset and batch.last_offset < self._end and whole_and_plain(batch)

    def _digest(self) -> Digested:
        if self._digested is None:
            if self._records is not None:  # decoded already, and counted as read then
                self._digested = _digest_records(self._records)
                return self._digested
            self._digested = digest_batch(self.batch, self._start, self._end)
            self._counter.records += len(self._digested.digests)
            self._counter.bytes += self._digested.bytes
        return self._digested

    def records(self) -> list[DecodedRecord]:
        """The block's records, decoded (once) and counted as read; its digests are then made from them."""
        if self._records is None:
            self._records = _in_range(self.batch, self._start, self._end)
            if self._digested is None:
                self._counter.records += len(self._records)
                self._counter.bytes += sum(record_bytes(record) for record in self._records)
        return self._records

    def offsets(self) -> Sequence[int]:
        if self._digested is None and self.whole:
            return range(self.batch.base_offset, self.batch.last_offset + 1)
        return self._digest().offsets

    def digests(self) -> Sequence[int]:
        return self._digest().digests

    def copies(self, source: object) -> bool:
        """True when `source` is a whole batch whose records this whole batch holds byte for byte (`same_records`);
        then this block's records count as read without being digested (they are the source's)."""
        read = self._digested is not None or self._records is not None
        if not (isinstance(source, BatchBlock) and not read and self.whole and source.whole):
            return False
        if not same_records(self.batch, source.batch):
            return False
        theirs = source._digest()
        ours = range(self.batch.base_offset, self.batch.last_offset + 1)
        self._digested = Digested(ours, theirs.digests, theirs.bytes)
        self._counter.records += len(theirs.digests)
        self._counter.bytes += theirs.bytes
        return True
