"""Kafka record batches as they travel between clusters: read from a fetch, rewritten for the target, re-encoded.

Batch forwarding moves the source's v2 record batches to the target unchanged apart from the header fields the
target must own: the base offset (a produced batch must carry 0; the CRC does not cover it), the partition
leader epoch, the producer id, epoch and base sequence (the copier's own idempotent producer), and the
transactional flag. The CRC-32C over the attributes onwards is recomputed. Records, compression and
timestamps are untouched, so the target gives record `i` of the batch the offset `base + i`.

A batch that cannot go as it is (a head before the fetch position, offset gaps left by compaction, log-append
timestamps, an old message format, or a target refusal) is re-encoded record by record with aiokafka's
builder; the upstream offset of each record is kept beside it, so offset syncs stay exact.

A forwarded batch's records are copied once, out of the fetch response (which is then freed whole); `TargetBatch`
keeps them apart from the rewritten 61-byte header, and the Produce request is written from the two
(`produce_request`) without another copy of its own.

Pure: no I/O. The wire layout comes from aiokafka's record module (`DefaultRecordBatch`, its builder); CRC-32C from
the `crc32c` package (hardware instructions where the CPU has them: a dozen times aiokafka's table code, and it
continues a checksum over a second buffer, which a header kept apart from its records needs).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from aiokafka.record.control_record import ABORT_MARKER, ControlRecord
from aiokafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from aiokafka.record.legacy_records import LegacyRecordBatch
from crc32c import crc32c

from shared.kafka.byte_headers import read_records, write_batch

_HEADER = struct.Struct(
    ">q"  # base offset
    "i"  # length (of what follows this field)
    "i"  # partition leader epoch
    "b"  # magic
    "I"  # crc-32c, over attributes to the end
    "h"  # attributes
    "i"  # last offset delta
    "q"  # first timestamp
    "q"  # max timestamp
    "q"  # producer id
    "h"  # producer epoch
    "i"  # base sequence
    "i"  # record count
)
_LOG_OVERHEAD = 12  # base offset + length: every message format starts with them
HEADER_BYTES = _HEADER.size  # 61: a v2 batch's header, before its records
_MAGIC_AT = 16
_CRC_AT = 17
_ATTRIBUTES_AT = 21
_PRODUCER_AT = 43  # producer id, epoch, base sequence: ">qhi"
_PRODUCER = struct.Struct(">qhi")
_LEADER_EPOCH = struct.Struct(">i")

COMPRESSION_MASK = 0x07
LOG_APPEND_TIME_FLAG = 0x08
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20
DELETE_HORIZON_FLAG = 0x40  # the log cleaner's: the first timestamp holds when tombstones may go (KIP-534)
NO_PRODUCER_ID = -1
NO_LEADER_EPOCH = -1
UNLIMITED_BATCH_BYTES = 2**31 - 1


@dataclass(frozen=True, slots=True)
class SourceBatch:
    """One batch of a fetch response as the source stored it (`raw` is the whole batch, header included)."""

    raw: memoryview
    base_offset: int
    last_offset: int
    magic: int
    attributes: int = 0
    producer_id: int = NO_PRODUCER_ID
    count: int = 0
    max_timestamp: int = -1
    corrupt: str | None = None  # why the stored checksum does not match the bytes (None: it matches)
    leader_epoch: int = -1  # the epoch of the leader that appended it (v2; -1: an old format)

    @property
    def is_control(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & CONTROL_FLAG)

    @property
    def is_transactional(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & TRANSACTIONAL_FLAG)

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    def why_not_forwardable(self, position: int) -> str | None:
        """None when the batch can go to the target as it is from `position` on; otherwise the reason."""
        if self.magic < 2:
            return f"message format v{self.magic}"
        if self.base_offset < position:
            return "starts before the position"
        if self.count != self.last_offset - self.base_offset + 1:
            return "offset gaps (compacted)"
        if self.attributes & LOG_APPEND_TIME_FLAG:
            return "log-append timestamps"
        if self.attributes & DELETE_HORIZON_FLAG:
            return "cleaned tombstones (a delete horizon)"  # the source's horizon must not reach the target
        return None


def read_batches(message_set: bytes | memoryview) -> list[SourceBatch]:
    """The whole batches in a fetch response's records (a truncated last one is left for the next fetch)."""
    view = memoryview(message_set)
    batches: list[SourceBatch] = []
    position = 0
    while len(view) - position > _MAGIC_AT:
        base_offset, length = struct.unpack_from(">qi", view, position)
        end = position + _LOG_OVERHEAD + length
        if end > len(view):
            break
        raw = view[position:end]
        if raw[_MAGIC_AT] >= 2:
            fields = _HEADER.unpack_from(raw)
            computed = crc32c(raw[_ATTRIBUTES_AT:])  # the fetched bytes as they are, not a copy
            batches.append(
                SourceBatch(
                    raw=raw,
                    base_offset=base_offset,
                    last_offset=base_offset + fields[6],
                    magic=fields[3],
                    attributes=fields[5],
                    producer_id=fields[9],
                    count=fields[12],
                    max_timestamp=fields[8],
                    leader_epoch=fields[2],
                    corrupt=None
                    if computed == fields[4]
                    else f"CRC-32C {fields[4]:#010x} stored, {computed:#010x} computed",
                )
            )
        else:  # v0/v1: a wrapper message holds its inner messages; its offset is the last inner one's
            batches.append(_legacy_batch(raw, batches[-1].next_offset if batches else 0))
        position = end
    return batches


def _legacy_batch(raw: memoryview, after: int) -> SourceBatch:
    """A v0/v1 message (set); `after` is where the batch before it in the fetch ended (0 for the first)."""
    wrapper = LegacyRecordBatch(bytes(raw), raw[_MAGIC_AT])
    if not wrapper.validate_crc():
        # A compressed wrapper's offset is its last inner record's, and where its first is cannot be read from
        # damaged bytes (nor whether it is compressed): it starts right after the batch before it at the latest,
        # so a copy stopped there skips none of its records (the first batch of a fetch: at the fetch position).
        last_offset = struct.unpack_from(">q", raw)[0]
        return SourceBatch(
            raw=raw,
            base_offset=min(after, last_offset),
            last_offset=last_offset,
            magic=raw[_MAGIC_AT],
            corrupt="CRC-32 mismatch",
        )
    records = list(wrapper)
    offsets = [record.offset for record in records]
    first, last = (offsets[0], offsets[-1]) if offsets else (struct.unpack_from(">q", raw)[0],) * 2
    newest = max((record.timestamp or -1 for record in records), default=-1)
    return SourceBatch(
        raw=raw, base_offset=first, last_offset=last, magic=raw[_MAGIC_AT], count=len(offsets), max_timestamp=newest
    )


@dataclass
class CommittedFilter:
    """read_committed over raw batches: drops control batches and the batches of aborted transactions.

    The fetch response lists the aborted transactions that overlap it as (producer id, first offset); a
    transactional batch of a listed producer, from that offset up to its abort marker, was aborted (the same
    rule as Kafka's Java consumer)."""

    aborted: list[tuple[int, int]]
    _open_aborts: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.aborted = sorted(self.aborted, key=lambda entry: entry[1])

    def committed(self, batches: Iterable[SourceBatch]) -> Iterator[SourceBatch]:
        """The batches a read_committed consumer would see, in order; control batches never."""
        for batch in batches:
            if batch.magic >= 2 and batch.producer_id != NO_PRODUCER_ID:
                while self.aborted and self.aborted[0][1] <= batch.last_offset:
                    self._open_aborts.add(self.aborted.pop(0)[0])
                if batch.is_control:
                    if _is_abort_marker(batch):
                        self._open_aborts.discard(batch.producer_id)
                    continue
                if batch.is_transactional and batch.producer_id in self._open_aborts:
                    continue
            if not batch.is_control:
                yield batch


def _is_abort_marker(batch: SourceBatch) -> bool:
    for record in DefaultRecordBatch(bytes(batch.raw)):
        key = record.key
        return key is not None and ControlRecord.parse(key) == ABORT_MARKER
    return False


class TargetBatch:
    """A v2 batch made for the target: its header, ours to rewrite (base offset, leader epoch, attributes, producer,
    CRC), and its records as they are, held apart so that the Produce request is written from the two without
    joining them first (`produce_request`)."""

    __slots__ = ("body", "head")

    def __init__(self, head: bytearray, body: bytes | memoryview) -> None:
        self.head = head
        self.body = body

    @classmethod
    def of(cls, encoded: bytearray) -> TargetBatch:
        """A whole encoded batch (`encode_records`' own bytes): its header copied apart, its records viewed."""
        return cls(bytearray(encoded[:HEADER_BYTES]), memoryview(encoded)[HEADER_BYTES:])

    def __len__(self) -> int:
        return len(self.head) + len(self.body)

    def __bytes__(self) -> bytes:
        return bytes(self.head) + bytes(self.body)

    def set_producer(
        self, producer_id: int, producer_epoch: int, base_sequence: int, *, transactional: bool = False
    ) -> None:
        """Our producer's id, epoch and the batch's first sequence, and whether it is written inside the producer's
        transaction (its attributes' transactional bit); CRC recomputed over header and records."""
        _PRODUCER.pack_into(self.head, _PRODUCER_AT, producer_id, producer_epoch, base_sequence)
        (attributes,) = struct.unpack_from(">h", self.head, _ATTRIBUTES_AT)
        attributes = attributes | TRANSACTIONAL_FLAG if transactional else attributes & ~TRANSACTIONAL_FLAG
        struct.pack_into(">h", self.head, _ATTRIBUTES_AT, attributes)
        crc = crc32c(self.body, crc32c(memoryview(self.head)[_ATTRIBUTES_AT:]))
        struct.pack_into(">I", self.head, _CRC_AT, crc)


def for_target(batch: SourceBatch, producer_id: int, producer_epoch: int, base_sequence: int) -> TargetBatch:
    """The batch as the target must receive it: base offset 0, no leader epoch, our producer, not transactional.

    Its records are copied out of the fetch response once: a view would keep the whole response alive until the
    last of its batches is acknowledged, while the byte bound counts only the batches (measured at 1,000
    partitions: 40 MiB more resident per run)."""
    head = bytearray(batch.raw[:HEADER_BYTES])
    struct.pack_into(">q", head, 0, 0)
    _LEADER_EPOCH.pack_into(head, 12, NO_LEADER_EPOCH)
    attributes = batch.attributes & ~(TRANSACTIONAL_FLAG | CONTROL_FLAG)
    struct.pack_into(">h", head, _ATTRIBUTES_AT, attributes)
    out = TargetBatch(head, batch.raw[HEADER_BYTES:].tobytes())
    out.set_producer(producer_id, producer_epoch, base_sequence)
    return out


class RecordFields(Protocol):
    """What of a record `encode_records` writes: a decoded source record, or one a transform made."""

    @property
    def timestamp(self) -> int | None: ...  # None: none (the target's time is used)
    @property
    def key(self) -> bytes | None: ...
    @property
    def value(self) -> bytes | None: ...
    @property
    def headers(self) -> Sequence[tuple[str | bytes, bytes | None]]: ...


class DecodedRecord(RecordFields, Protocol):
    """One record of a source batch, as a consumer sees it (log-append batches give every record that time):
    aiokafka's own record, or a `SourceRecord` where aiokafka cannot read it."""

    @property
    def offset(self) -> int: ...


@dataclass(frozen=True, slots=True)
class SourceRecord:
    """A decoded record aiokafka does not make: an old format's, or one with a header key that is not UTF-8."""

    offset: int
    timestamp: int | None  # None: message format v0 had none (the target's producer time is used)
    key: bytes | None
    value: bytes | None
    headers: Sequence[tuple[str | bytes, bytes | None]]  # a key not UTF-8 stays bytes (`byte_headers`)


def records_of(batch: SourceBatch, from_offset: int = 0) -> list[DecodedRecord]:
    """The batch's records at `from_offset` or later, decompressed (decoded once, by aiokafka's C codec for v2)."""
    raw = bytes(batch.raw)
    try:
        if batch.magic >= 2:
            return [record for record in DefaultRecordBatch(raw) if record.offset >= from_offset]
    except UnicodeDecodeError:  # a header key that is not UTF-8 (v2 only: older formats have no headers)
        return [SourceRecord(*fields) for fields in read_records(raw) if fields[0] >= from_offset]
    legacy = LegacyRecordBatch(raw, batch.magic)
    return [
        SourceRecord(record.offset, record.timestamp, record.key, record.value, ())
        for record in legacy
        if record.offset >= from_offset
    ]


def encode_records(records: Sequence[RecordFields], compression: int) -> TargetBatch:
    """A v2 batch for the target holding `records` back to back (offset deltas 0..n-1), no producer yet."""
    if any(isinstance(name, bytes) for record in records for name, _ in record.headers):
        return TargetBatch.of(write_batch([(r.timestamp, r.key, r.value, r.headers) for r in records], compression))
    builder = DefaultRecordBatchBuilder(2, compression, 0, NO_PRODUCER_ID, -1, -1, UNLIMITED_BATCH_BYTES)
    for index, record in enumerate(records):
        builder.append(index, record.timestamp, record.key, record.value, list(record.headers))
    return TargetBatch.of(builder.build())
