"""Records that exercise every field a copy must keep (null keys and values, repeated and empty headers, old
timestamps), and the record-by-record comparison of a source topic with its remote topic."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Protocol, TypeVar

from shared.localkafka import KafkaCluster
from tests.support.kafka_io import produce

HEADERS = [("trace", b"\x00\xff\x10"), ("dup", b"1"), ("dup", b"2"), ("empty", None)]


class Record(Protocol):
    """What the comparison reads of a record: `kafka_io.Rec`, or `byte_records.ByteRec` (header keys as bytes)."""

    @property
    def partition(self) -> int: ...
    @property
    def offset(self) -> int: ...
    @property
    def key(self) -> bytes | None: ...
    @property
    def value(self) -> bytes | None: ...
    @property
    def headers(self) -> Sequence[tuple[str | bytes, bytes | None]]: ...
    @property
    def timestamp_ms(self) -> int: ...


R = TypeVar("R", bound=Record)


def by_partition(records: Iterable[R]) -> dict[int, list[R]]:
    """Records grouped per partition, in offset order."""
    out: dict[int, list[R]] = defaultdict(list)
    for record in sorted(records, key=lambda r: (r.partition, r.offset)):
        out[record.partition].append(record)
    return out


def fill_varied(a: KafkaCluster, topic: str, partitions: int, per_partition: int, start_ts: int) -> None:
    """`per_partition` records in each partition: every 7th without a key, every 11th without a value, all with
    `HEADERS` and the partition's own timestamp from `start_ts`."""
    props = a.client_properties()
    for p in range(partitions):
        batch: list[tuple[bytes | None, bytes | None]] = []
        for i in range(per_partition):
            key = None if i % 7 == 0 else f"k{p}-{i}".encode()
            value = None if i % 11 == 0 else bytes([i % 256, 0, 255]) + f"v{p}-{i}".encode()
            batch.append((key, value))
        produce(props, topic, batch, partition=p, headers=HEADERS, timestamp_ms=start_ts + p)


def assert_identical(source: Sequence[Record], target: Sequence[Record]) -> None:
    """Same partitions, and in each the same records in the same order: key, value, headers and timestamp."""
    src, dst = by_partition(source), by_partition(target)
    assert src.keys() == dst.keys()
    for partition, records in src.items():
        mirrored = dst[partition]
        assert len(mirrored) == len(records), f"partition {partition}: {len(mirrored)} != {len(records)}"
        for original, copy in zip(records, mirrored, strict=True):
            assert (copy.key, copy.value, copy.headers, copy.timestamp_ms) == (
                original.key,
                original.value,
                original.headers,
                original.timestamp_ms,
            )
