"""A flow's transforms applied to the records it copies (the chain `shared/config/transforms.py` reads).

Connect's semantics: each transform in order, each only where its predicate holds (or does not, negated); a
transform that drops the record ends the chain. `TopicNameMatches` sees the remote topic's name, as MM2's records
carry it: every record of a partition goes to the same remote topic, so it is decided once per partition
(`for_topic`). A dropped record is a gap in the remote partition, as on a compacted topic: the offset syncs place
the next copied record afresh.

The chain works on a batch's records at once (`apply_batch`; `apply` is a batch of one): each step runs over the
records left by the one before (`mirror_record`). A record nothing changes stays the object it came as (the batch
copier forwards a batch none of whose records changed as it is); one a transform changes becomes a `MirrorRecord`
first. A transform that fails stops the batch at the record it failed on: the records before it go on through the
chain (`Chained.failed_at`). Python transforms are `python_transforms`'.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from shared.config.transforms import PredicateSpec, TransformSpec
from shared.reshape.mirror_record import Batch, MirrorRecord, Place, Step, StepFailed
from shared.reshape.python_transforms import BatchCallFailed, TransformFailed, check_functions, python_step

# What a Python transform's module imports (docs/operations.md), and what the data-mirror service checks at start
__all__ = [
    "BatchCallFailed",
    "Chained",
    "MirrorRecord",
    "TransformChain",
    "TransformFailed",
    "check_functions",
    "for_topic",
]


@dataclass(slots=True)
class Chained:
    """What the chain made of a batch's records."""

    records: list[Any]  # kept, in order: each the record given (not changed) or a MirrorRecord
    offsets: list[int]  # their source offsets
    changed: bool  # a record was changed or dropped
    failed_at: int | None = None  # the source offset of the record a transform failed on (nothing from it is kept)
    failure: str | None = None
    returned: list[int] = field(default_factory=list)  # source offsets not copied: they came from the target (reshape)


def for_topic(transforms: Sequence[TransformSpec], topic: str) -> tuple[TransformSpec, ...]:
    """The chain as it applies to the records of remote topic `topic`: a transform whose TopicNameMatches predicate
    never holds there is left out, one whose predicate always holds loses it."""
    applied = []
    for spec in transforms:
        predicate = spec.predicate
        if predicate is not None and predicate.kind == "topic_matches":
            if (_topic_pattern(predicate).fullmatch(topic) is not None) == spec.negate:
                continue
            spec = replace(spec, predicate=None, negate=False)
        applied.append(spec)
    return tuple(applied)


class TransformChain:
    """The flow's transforms, ready to apply to the records of one remote topic (or, for records that carry their
    topic, of any): `apply` to one record, `apply_batch` to a batch's."""

    def __init__(self, transforms: Sequence[TransformSpec]) -> None:
        self._batched = [_guarded(_step(spec, batch_calls=True), spec) for spec in transforms]
        self._one_by_one = [_guarded(_step(spec, batch_calls=False), spec) for spec in transforms]

    def __bool__(self) -> bool:
        return bool(self._batched)

    def apply(self, record: MirrorRecord) -> MirrorRecord | None:
        """The record to copy (changed or not), or None when it is dropped; TransformFailed when a transform fails."""
        chained = self._run(self._one_by_one, [record], [record.offset], Place(record.topic, record.partition))
        if chained.failure is not None:
            raise TransformFailed(chained.failure)
        return chained.records[0] if chained.records else None

    def apply_batch(
        self, records: list[Any], offsets: list[int], topic: str, partition: int, *, batch_calls: bool = True
    ) -> Chained:
        """The chain over a batch's `records` (source offsets `offsets`) bound for `topic`-`partition`. With
        `batch_calls`, Python transforms with a `batch` function are called once for the batch (BatchCallFailed when
        that fails: run it again without them, from records no transform changed)."""
        return self._run(self._batched if batch_calls else self._one_by_one, records, offsets, Place(topic, partition))

    @staticmethod
    def _run(steps: list[Step], records: list[Any], offsets: list[int], place: Place) -> Chained:
        changed, failed_at, failure = False, None, None
        for step in steps:
            if not records:
                break
            try:
                records, offsets, changed_here = step(records, offsets, place)
            except StepFailed as exc:  # the records before it go on through the chain
                (records, offsets), changed_here = exc.done, True
                failed_at, failure = exc.offset, exc.message
            changed = changed or changed_here
        return Chained(records, offsets, changed, failed_at, failure)


def _step(spec: TransformSpec, *, batch_calls: bool) -> Step:
    if spec.kind == "filter":
        return lambda records, _offsets, _place: ([], [], bool(records))
    if spec.kind == "insert_header":
        header = (spec.header or "", spec.value)

        def insert(records: list[Any], offsets: list[int], place: Place) -> Batch:
            made = [place.mutable(record, offset) for record, offset in zip(records, offsets, strict=True)]
            for record in made:
                record.headers.append(header)  # added, as Connect's Headers.add: an existing one of the name stays
            return made, offsets, True

        return insert
    if spec.kind == "drop_headers":
        names = frozenset(spec.headers)

        def drop(records: list[Any], offsets: list[int], place: Place) -> Batch:
            out, changed = [], False
            for record, offset in zip(records, offsets, strict=True):
                headers = record.headers
                kept = [header for header in headers if header[0] not in names]
                if len(kept) == len(headers):
                    out.append(record)
                    continue
                changed = True
                out.append(place.mutable(record, offset, headers=kept))
            return out, offsets, changed

        return drop
    return python_step(spec, batch_calls=batch_calls)


def _guarded(step: Step, spec: TransformSpec) -> Step:
    """`step` only for the records where the predicate holds (or does not, negated); the others pass it by."""
    predicate, negate = spec.predicate, spec.negate
    if predicate is None:
        return step
    if predicate.kind == "topic_matches":
        pattern = _topic_pattern(predicate)

        def by_topic(records: list[Any], offsets: list[int], place: Place) -> Batch:
            if (pattern.fullmatch(place.topic) is not None) != negate:
                return step(records, offsets, place)
            return records, offsets, False

        return by_topic
    test = _test(predicate)

    def guarded(records: list[Any], offsets: list[int], place: Place) -> Batch:
        chosen = [test(record) != negate for record in records]
        if not any(chosen):
            return records, offsets, False
        if all(chosen):
            return step(records, offsets, place)
        picked = [(record, offset) for record, offset, pick in zip(records, offsets, chosen, strict=True) if pick]
        passed = [(record, offset) for record, offset, pick in zip(records, offsets, chosen, strict=True) if not pick]
        try:
            out, kept, changed = step([r for r, _ in picked], [o for _, o in picked], place)
        except StepFailed as exc:
            before = [(r, o) for r, o in passed if o < exc.offset]
            exc.done = _in_order(before, list(zip(*exc.done, strict=True)))
            raise
        return (*_in_order(passed, list(zip(out, kept, strict=True))), changed)

    return guarded


def _in_order(first: list[tuple[Any, int]], second: list[tuple[Any, int]]) -> tuple[list[Any], list[int]]:
    """Two runs of (record, offset), each in offset order, as one (records, offsets) in offset order."""
    merged = sorted([*first, *second], key=lambda pair: pair[1])
    return [record for record, _ in merged], [offset for _, offset in merged]


def _topic_pattern(predicate: PredicateSpec) -> re.Pattern[str]:
    """TopicNameMatches' pattern, matched against the whole remote topic name (Java's `matches()`)."""
    return re.compile(predicate.argument or "", re.ASCII)


def _test(predicate: PredicateSpec) -> Callable[[Any], bool]:
    if predicate.kind == "is_tombstone":
        return lambda record: record.value is None
    if predicate.kind == "has_header_key":
        name = predicate.argument

        def has(record: Any) -> bool:
            for header in record.headers:  # noqa: SIM110 (a loop: any() over a generator costs twice, per record)
                if header[0] == name:
                    return True
            return False

        return has
    raise AssertionError(f"a topic predicate is decided per batch: {predicate}")
