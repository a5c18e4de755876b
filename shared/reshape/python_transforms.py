"""Python transforms (`strait.transforms.Python`): the function a flow names, imported, and called as a step.

The function is given a `MirrorRecord` and returns it (changed or not), a new one, or None to drop it; it is
imported when the task starts, and when the data-mirror service starts, so a wrong name stops the service before
anything is copied. If it has a `batch` attribute, a function given a list of records that returns what the
function would for each, in order, batches call that instead (once per batch, not per record). A call that raises
or returns something else stops the batch at its record (`StepFailed`); a batch call that does is reported as
`BatchCallFailed` (its records may be half changed): the caller runs the chain again from its own records with the
per-record function, which names the record.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any

from shared.config.transforms import PYTHON, TRANSFORMS_KEY, TransformSpec
from shared.errors import ConfigError
from shared.reshape.mirror_record import Batch, MirrorRecord, Place, Step, StepFailed, contents


class TransformFailed(Exception):
    """A Python transform raised, or returned something that is not a record: the record is not copied."""


class BatchCallFailed(TransformFailed):
    """A Python transform's batch call raised or returned something else: its records may be half changed."""


def load_function(spec: TransformSpec) -> Callable[[MirrorRecord], object]:
    """The Python function a `strait.transforms.Python` transform names; ConfigError naming the key if it cannot be
    imported or is not callable (nor its `batch` attribute, when it has one)."""
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
    batch = getattr(function, "batch", None)
    if batch is not None and not callable(batch):
        raise ConfigError(
            f"{key}={spec.function}: its `batch` attribute is not a function (given a list of records, it returns "
            "what the function returns for each)",
            key=key,
            value=spec.function,
        )
    return function  # type: ignore[no-any-return]


def check_functions(transforms: Sequence[TransformSpec]) -> None:
    """Import every Python transform of a chain (at service start: a wrong name stops it with the key named)."""
    for spec in transforms:
        if spec.kind == "python":
            load_function(spec)


def python_step(spec: TransformSpec, *, batch_calls: bool) -> Step:
    """The step that calls the transform's function for each record (`batch_calls`: its `batch` function once for
    the batch, when it has one)."""
    function = load_function(spec)
    batch = getattr(function, "batch", None) if batch_calls else None
    name = f"transform {spec.alias} ({spec.function})"
    return _batch_call(name, batch) if batch is not None else _calls(name, function)


def _calls(name: str, function: Callable[[MirrorRecord], object]) -> Step:
    def call(records: list[Any], offsets: list[int], place: Place) -> Batch:
        results: list[object] = []
        before: list[tuple[Any, ...]] = []
        for record, offset in zip(records, offsets, strict=True):
            given = place.mutable(record, offset)
            before.append(contents(given))
            try:
                result = function(given)
            except Exception as exc:
                done = _kept(records, offsets, results, before)
                raise StepFailed(offset, f"{name} raised {type(exc).__name__}: {exc}", done[:2]) from exc
            if result is not None and not isinstance(result, MirrorRecord):
                what = f"{name} returned {type(result).__name__}, not a MirrorRecord or None"
                raise StepFailed(offset, what, _kept(records, offsets, results, before)[:2])
            results.append(result)
        return _kept(records, offsets, results, before)

    return call


def _batch_call(name: str, batch: Callable[[list[MirrorRecord]], object]) -> Step:
    def call(records: list[Any], offsets: list[int], place: Place) -> Batch:
        given = [place.mutable(record, offset) for record, offset in zip(records, offsets, strict=True)]
        before = [contents(record) for record in given]
        try:
            results = batch(given)
        except Exception as exc:
            raise BatchCallFailed(f"{name}: its batch call raised {type(exc).__name__}: {exc}") from exc
        if not isinstance(results, list) or len(results) != len(given):
            raise BatchCallFailed(f"{name}: its batch call returned no list of {len(given)} results")
        wrong = next((r for r in results if r is not None and not isinstance(r, MirrorRecord)), None)
        if wrong is not None:
            raise BatchCallFailed(f"{name}: its batch call returned {type(wrong).__name__} for a record")
        return _kept(records, offsets, results, before)

    return call


def _kept(records: list[Any], offsets: list[int], results: list[Any], before: list[tuple[Any, ...]]) -> Batch:
    """The records the calls kept (`results[i]` for `records[i]`, as far as they go), their offsets, and whether
    any was changed or dropped; a record returned unchanged stays the one it came as."""
    out: list[Any] = []
    kept: list[int] = []
    changed = False
    for record, offset, result, was in zip(records, offsets, results, before, strict=False):
        if result is None:
            changed = True
            continue
        if contents(result) != was:
            changed = True
            out.append(result)
        else:
            out.append(record)
        kept.append(offset)
    return out, kept, changed
