"""The verifier's reader over raw fetches: a range read batch by batch across fetches, cut at its ends, read_committed;
a range no longer on the partition and a partition that does not move are failed reads, a moved leader is not."""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

import pytest
from aiokafka.record.util import calc_crc32c

from shared.kafka import digest_reader
from shared.kafka.batch_fetcher import PartitionFetch
from shared.kafka.byte_headers import write_batch
from shared.kafka.digest_reader import PartitionEntries, ReadCounter, ReadStalled
from shared.kafka.error_codes import OFFSET_OUT_OF_RANGE
from shared.kafka.record_batches import read_batches
from shared.kafka.record_digests import digest_batch
from tests.unit.shared.kafka.test_record_batches import _batch, _marker

NOT_LEADER = 6


class _Fetcher:
    """A partition's log, answered at most `per_fetch` batches at a time; `errors` answer the first fetches."""

    def __init__(self, log: bytes, per_fetch: int = 2, errors: list[int] | None = None) -> None:
        self.batches = read_batches(log)
        self.per_fetch = per_fetch
        self.errors = list(errors or [])
        self.aborted: list[tuple[int, int]] = []
        self.asked: list[int] = []
        self.refreshed = 0

    def leader(self, _key: tuple[str, int]) -> int:
        return 1

    async def fetch(self, _node: int, positions: Mapping[tuple[str, int], int], _max: int) -> dict[Any, Any]:
        ((key, position),) = positions.items()
        self.asked.append(position)
        error = self.errors.pop(0) if self.errors else 0
        found = [batch for batch in self.batches if batch.last_offset >= position][: self.per_fetch]
        records = b"" if error else b"".join(batch.raw.tobytes() for batch in found)
        return {key: PartitionFetch(position, error, 100, 100, 0, self.aborted, records)}

    async def refresh(self) -> None:
        self.refreshed += 1

    async def add_topics(self, _topics: list[str]) -> None:
        pass

    async def close(self) -> None:
        pass


class _Consumer:
    def close(self) -> None:
        pass


def _reader(fetcher: _Fetcher, timeout_s: float = 5.0) -> Any:
    reader: Any = PartitionEntries.__new__(PartitionEntries)  # its clients given, not made from settings
    reader._props, reader._consumer, reader._timeout_s = {}, _Consumer(), timeout_s
    reader._loop, reader._fetcher, reader.counter = digest_reader._LoopThread("test"), fetcher, ReadCounter()
    return reader


def _read(reader: Any, start: int, end: int) -> list[tuple[int, int]]:
    try:
        return [
            (o, d)
            for block in reader.blocks("orders", 0, start, end)
            for o, d in zip(block.offsets(), block.digests(), strict=True)
        ]
    finally:
        reader.close()


def test_a_range_is_read_across_fetches_and_cut_at_both_ends() -> None:
    log = _batch(0, 4) + _batch(4, 3) + _batch(7, 5) + _batch(12, 2)
    fetcher = _Fetcher(log, per_fetch=2)
    reader = _reader(fetcher)
    read = _read(reader, 2, 13)
    everything = [(o, d) for batch in read_batches(log) for o, d in zip(*_digested(batch), strict=True)]
    assert read == [(o, d) for o, d in everything if 2 <= o < 13]
    assert fetcher.asked == [2, 7]  # each from where the last fetch's last batch ended, till past the end
    assert reader.counter.records == 11


def _digested(batch: Any) -> tuple[Any, list[int]]:
    digested = digest_batch(batch, 0, 10**9)
    return digested.offsets, digested.digests


def test_aborted_transactions_and_markers_are_left_out() -> None:
    log = _batch(0, 2) + _batch(2, 2, producer=5, transactional=True) + _marker(4, 5, abort=True) + _batch(5, 2)
    fetcher = _Fetcher(log, per_fetch=10)
    fetcher.aborted = [(5, 2)]
    assert [offset for offset, _ in _read(_reader(fetcher), 0, 7)] == [0, 1, 5, 6]


def test_a_moved_leader_is_asked_again_and_a_range_gone_from_the_partition_fails_at_once() -> None:
    moved = _Fetcher(_batch(0, 3), errors=[NOT_LEADER])
    assert [offset for offset, _ in _read(_reader(moved), 0, 3)] == [0, 1, 2]
    assert moved.refreshed == 1

    gone = _Fetcher(_batch(0, 3), errors=[OFFSET_OUT_OF_RANGE])
    with pytest.raises(ReadStalled, match="offset 0 is not in the partition"):
        _read(_reader(gone), 0, 3)


def test_a_partition_that_does_not_reach_the_end_stalls() -> None:
    with pytest.raises(ReadStalled, match="stopped at offset 3 of 5"):
        _read(_reader(_Fetcher(_batch(0, 3)), timeout_s=0.2), 0, 5)


def test_a_record_whose_header_key_is_not_utf8_is_read_and_digested_not_a_failed_read() -> None:
    """Kafka allows any bytes as a header key (a record written by a producer other than Java's)."""
    plain = [(1_000 + i, f"k{i}".encode(), b"v", [("h", b"x")]) for i in range(3)]
    odd = write_batch([plain[0], (1_001, b"k1", b"v", [(b"\xff", b"x")]), plain[2]], 0)
    struct.pack_into(">q", odd, 0, 0)
    struct.pack_into(">I", odd, 17, calc_crc32c(bytes(odd[21:])))
    digests = [d for _, d in _read(_reader(_Fetcher(bytes(odd))), 0, 3)]
    assert len(digests) == 3, "every record read, the one with the odd key too"
    assert digests[0] == next(d for _, d in _read(_reader(_Fetcher(bytes(write_batch(plain, 0)))), 0, 3))
