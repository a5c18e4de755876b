"""A flow's transforms applied to each record it copies (the chain `shared/config/transforms.py` reads).

Connect's semantics: each transform in order, each only where its predicate holds (or does not, negated); a
transform that drops the record ends the chain. `TopicNameMatches` sees the remote topic's name, as MM2's records
carry it. A dropped record is a gap in the remote partition, as on a compacted topic: the offset syncs place the
next copied record afresh.

A Python transform is a function given a `MirrorRecord` that returns it (changed or not), a new one, or None to
drop it; it is imported when the task starts, and when the data-mirror service starts, so a wrong name stops the
service before anything is copied.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from shared.config.transforms import PYTHON, TRANSFORMS_KEY, PredicateSpec, TransformSpec
from shared.errors import ConfigError

Header = tuple[str, bytes | None]


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


Step = Callable[[MirrorRecord], MirrorRecord | None]


class TransformFailed(Exception):
    """A Python transform raised, or returned something that is not a record: the record is not copied."""


def load_function(spec: TransformSpec) -> Callable[[MirrorRecord], object]:
    """The Python function a `strait.transforms.Python` transform names; ConfigError naming the key if it cannot be
    imported or is not callable."""
    assert spec.function is not None
    key = spec.function_key or f"{TRANSFORMS_KEY}.{spec.alias}.function"
    module_name, _, name = spec.function.partition(":")
    try:
        module = importlib.import_module(module_name.strip())
    except Exception as exc:  # ImportError, or the module failed while loading
        raise ConfigError(
            f"{key}={spec.function}: module {module_name.strip()!r} cannot be imported ({type(exc).__name__}: {exc});"
            f" it must be on the PYTHONPATH of data-mirror and of its Spark workers ({PYTHON})",
            key=key,
            value=spec.function,
        ) from None
    function = getattr(module, name.strip(), None)
    if not callable(function):
        raise ConfigError(
            f"{key}={spec.function}: module {module_name.strip()!r} has no function {name.strip()!r}",
            key=key,
            value=spec.function,
        )
    return function  # type: ignore[no-any-return]


def check_functions(transforms: Sequence[TransformSpec]) -> None:
    """Import every Python transform of a chain (at service start: a wrong name stops it with the key named)."""
    for spec in transforms:
        if spec.kind == "python":
            load_function(spec)


class TransformChain:
    """The flow's transforms, ready to apply; `apply` returns the record to copy, or None when it is dropped."""

    def __init__(self, transforms: Sequence[TransformSpec]) -> None:
        self._steps = [_guarded(_step(spec), spec.predicate, spec.negate) for spec in transforms]

    def __bool__(self) -> bool:
        return bool(self._steps)

    def apply(self, record: MirrorRecord) -> MirrorRecord | None:
        current: MirrorRecord | None = record
        for step in self._steps:
            current = step(current)  # type: ignore[arg-type]  # (None ends the loop below)
            if current is None:
                return None
        return current


def _step(spec: TransformSpec) -> Step:
    if spec.kind == "filter":
        return lambda _record: None
    if spec.kind == "insert_header":
        header = (spec.header or "", spec.value)

        def insert(record: MirrorRecord) -> MirrorRecord:
            record.headers.append(header)  # added, as Connect's Headers.add: an existing one of the name stays
            return record

        return insert
    if spec.kind == "drop_headers":
        names = frozenset(spec.headers)

        def drop(record: MirrorRecord) -> MirrorRecord:
            record.headers = [h for h in record.headers if h[0] not in names]
            return record

        return drop
    return _python_step(spec)


def _python_step(spec: TransformSpec) -> Step:
    function = load_function(spec)

    def call(record: MirrorRecord) -> MirrorRecord | None:
        try:
            result = function(record)
        except Exception as exc:
            raise TransformFailed(
                f"transform {spec.alias} ({spec.function}) raised {type(exc).__name__}: {exc}"
            ) from exc
        if result is not None and not isinstance(result, MirrorRecord):
            raise TransformFailed(
                f"transform {spec.alias} ({spec.function}) returned {type(result).__name__}, not a MirrorRecord or None"
            )
        return result

    return call


def _guarded(step: Step, predicate: PredicateSpec | None, negate: bool) -> Step:
    if predicate is None:
        return step
    test = _test(predicate)

    def guarded(record: MirrorRecord) -> MirrorRecord | None:
        return step(record) if test(record) != negate else record

    return guarded


def _test(predicate: PredicateSpec) -> Callable[[MirrorRecord], bool]:
    if predicate.kind == "is_tombstone":
        return lambda record: record.value is None
    if predicate.kind == "has_header_key":
        name = predicate.argument
        return lambda record: any(h[0] == name for h in record.headers)
    pattern = re.compile(predicate.argument or "", re.ASCII)
    return lambda record: pattern.fullmatch(record.topic) is not None
