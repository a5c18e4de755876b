"""Read MM2's internal records as MM2's readers do: a record that does not decode is skipped, never fatal.

One compacted topic may hold a tombstone, or a record an unknown writer wrote; stopping on it would stop a
service for good. Each reader says what a skipped record costs it (a counter, a log line).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from shared.errors import CodecError
from shared.kafka.follow import FollowedRecord

T = TypeVar("T")
Decode = Callable[[bytes, bytes, FollowedRecord], T]  # (key, value, the record for its headers and offset)
Skip = Callable[[FollowedRecord, str], None]  # (the record, why it was skipped)
TOMBSTONE = "tombstone or missing key"


def decoded(
    records: Iterable[FollowedRecord], decode: Decode[T], on_invalid: Skip, *, on_tombstone: Skip | None = None
) -> Iterator[tuple[FollowedRecord, T]]:
    """Each record with a key and a value, decoded; undecodable ones go to `on_invalid`, tombstones to
    `on_tombstone` (passed over quietly without one)."""
    for record in records:
        if record.key is None or record.value is None:
            if on_tombstone is not None:
                on_tombstone(record, TOMBSTONE)
            continue
        try:
            value = decode(record.key, record.value, record)
        except CodecError as exc:
            on_invalid(record, str(exc))
            continue
        yield record, value
