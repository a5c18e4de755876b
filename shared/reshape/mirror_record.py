"""A record on its way through a flow's transforms, and what a transform step is (`transforms`, `python_transforms`).

A step takes a batch's records with their source offsets and returns those it keeps, their offsets, and whether it
changed or dropped any. Records come as the source's decoded records; a step that changes one makes it a
`MirrorRecord` first (`mutable`), so a record no step changed stays the object it came as.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Header = tuple[str, bytes | None]  # a key that is not UTF-8 comes as bytes (the batch copier reads such records)


@dataclass(slots=True)
class MirrorRecord:
    """One record on its way to the target: what a Python transform gets and may change."""

    topic: str  # the remote topic it is written to
    partition: int
    offset: int  # its offset on the source
    key: bytes | None
    value: bytes | None
    headers: list[Header] = field(default_factory=list)
    timestamp: int = 0  # ms since the epoch


@dataclass(frozen=True, slots=True)
class Place:
    """Where a batch's records go: a record made mutable gets them."""

    topic: str
    partition: int

    def mutable(self, record: Any, offset: int, *, headers: list[Header] | None = None) -> MirrorRecord:
        return mutable(record, offset, self.topic, self.partition, headers=headers)


Batch = tuple[list[Any], list[int], bool]  # records, their offsets, whether the step changed or dropped any
Step = Callable[[list[Any], list[int], Place], Batch]


class StepFailed(Exception):
    """A step failed at the record of source offset `offset`; `done` is what it made of the records before it."""

    def __init__(self, offset: int, message: str, done: tuple[list[Any], list[int]]) -> None:
        super().__init__(message)
        self.offset, self.message, self.done = offset, message, done


def mutable(
    record: Any, offset: int, topic: str, partition: int, *, headers: list[Header] | None = None
) -> MirrorRecord:
    """`record` (source offset `offset`, bound for `topic`-`partition`) as a MirrorRecord a transform may change: a
    decoded source record is copied (with `headers` instead of its own, when given), a MirrorRecord taken as it
    is."""
    if type(record) is MirrorRecord:
        if headers is not None:
            record.headers = headers
        return record
    timestamp = record.timestamp
    return MirrorRecord(
        topic,
        partition,
        offset,
        record.key,
        record.value,
        list(record.headers) if headers is None else headers,
        -1 if timestamp is None else timestamp,
    )


def contents(record: Any) -> tuple[Any, ...]:
    """What of a record reaches the target (its topic and partition are the flow's)."""
    return record.key, record.value, list(record.headers), record.timestamp
