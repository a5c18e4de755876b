"""A flow's transform chain on single records: Connect's order, predicates and negation, and Python functions."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from shared.config.transforms import PredicateSpec, TransformSpec
from shared.errors import ConfigError
from shared.reshape.transforms import MirrorRecord, TransformChain, TransformFailed, check_functions


def record(
    value: bytes | None = b"v", headers: list[tuple[str, bytes | None]] | None = None, topic: str = "A.orders"
) -> MirrorRecord:
    return MirrorRecord(topic, 0, 7, b"k", value, list(headers or []), 1_000)


TOMBSTONE = PredicateSpec("tombstone", "is_tombstone")
SECRET = PredicateSpec("secret", "has_header_key", "secret")
ORDERS = PredicateSpec("orders", "topic_matches", r"A\.orders")


def test_filter_drops_every_record_or_only_where_its_predicate_holds() -> None:
    assert TransformChain([TransformSpec("all", "filter")]).apply(record()) is None
    drop_tombstones = TransformChain([TransformSpec("t", "filter", TOMBSTONE)])
    assert drop_tombstones.apply(record(None)) is None
    assert drop_tombstones.apply(record(b"x")) == record(b"x")


def test_negate_applies_the_transform_where_the_predicate_does_not_hold() -> None:
    keep_orders = TransformChain([TransformSpec("o", "filter", ORDERS, negate=True)])
    assert keep_orders.apply(record(topic="A.orders")) == record(topic="A.orders")
    assert keep_orders.apply(record(topic="A.orders-eu")) is None, "the whole name must match, as Java's matches()"
    assert keep_orders.apply(record(topic="A.payments")) is None


def test_headers_are_added_after_the_existing_ones_and_dropped_by_name() -> None:
    chain = TransformChain(
        [
            TransformSpec("strip", "drop_headers", SECRET, headers=("secret", "trace")),
            TransformSpec("tag", "insert_header", header="origin", value=b"A"),
        ]
    )
    out = chain.apply(record(headers=[("secret", b"s"), ("trace", None), ("origin", b"old"), ("keep", b"1")]))
    assert out is not None
    assert out.headers == [("origin", b"old"), ("keep", b"1"), ("origin", b"A")]
    untouched = chain.apply(record(headers=[("trace", b"t")]))
    assert untouched is not None
    assert untouched.headers == [("trace", b"t"), ("origin", b"A")], "no 'secret' header: DropHeaders does not apply"


def test_a_dropped_record_ends_the_chain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _module(
        tmp_path,
        monkeypatch,
        "count_calls",
        "calls = []\ndef seen(record):\n    calls.append(record.offset)\n    return record\n",
    )
    chain = TransformChain(
        [TransformSpec("t", "filter", TOMBSTONE), TransformSpec("p", "python", function="count_calls:seen")]
    )
    assert chain.apply(record(None)) is None
    assert chain.apply(record(b"x")) is not None
    assert sys.modules["count_calls"].calls == [7]


def test_a_python_transform_changes_or_drops_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _module(
        tmp_path,
        monkeypatch,
        "masks",
        """
        import json

        def mask_email(record):
            if record.value is None:
                return None
            doc = json.loads(record.value)
            doc["email"] = "***"
            record.value = json.dumps(doc).encode()
            return record
        """,
    )
    chain = TransformChain([TransformSpec("mask", "python", function="masks:mask_email")])
    out = chain.apply(record(b'{"id": 1, "email": "a@example.com"}'))
    assert out is not None
    assert out.value == b'{"id": 1, "email": "***"}'
    assert chain.apply(record(None)) is None


def test_a_python_transform_that_raises_or_returns_something_else_fails_naming_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _module(
        tmp_path,
        monkeypatch,
        "broken",
        "def boom(record):\n    raise KeyError('email')\ndef text(record):\n    return 'x'\n",
    )
    with pytest.raises(TransformFailed, match=r"transform b \(broken:boom\) raised KeyError: 'email'"):
        TransformChain([TransformSpec("b", "python", function="broken:boom")]).apply(record())
    with pytest.raises(TransformFailed, match="returned str, not a MirrorRecord or None"):
        TransformChain([TransformSpec("t", "python", function="broken:text")]).apply(record())


def test_a_python_transform_that_cannot_be_imported_is_a_config_error_naming_the_key() -> None:
    with pytest.raises(ConfigError) as missing:
        check_functions([TransformSpec("mask", "python", function="no_such_module_here:mask")])
    assert missing.value.key == "transforms.mask.function"
    assert "cannot be imported" in str(missing.value)
    with pytest.raises(ConfigError, match="has no function 'nothing'"):
        check_functions([TransformSpec("mask", "python", function="json:nothing")])


MASKING = """
def mask(record):
    if record.value == b"drop":
        return None
    if record.value == b"fail":
        raise ValueError("cannot mask")
    record.value = record.value.upper()
    return record
"""


def _batch_of_records() -> list[MirrorRecord]:
    kinds: list[tuple[bytes | None, list[tuple[str, bytes | None]]]] = [
        (b"a", []),
        (None, [("secret", b"s")]),
        (b"b", [("secret", b"s"), ("mask", b"1"), ("trace", b"t")]),
        (b"drop", [("mask", b"1")]),
        (b"c", [("mask", b"1")]),
        (b"d", [("keep", b"k")]),
    ]
    return [
        MirrorRecord("A.orders", 0, 10 + i, b"k", value, list(headers), 1_000)
        for i, (value, headers) in enumerate(kinds)
    ]


def _chain() -> TransformChain:
    masked = PredicateSpec("masked", "has_header_key", "mask")
    return TransformChain(
        [
            TransformSpec("t", "filter", TOMBSTONE),
            TransformSpec("strip", "drop_headers", SECRET, headers=("secret", "trace")),
            TransformSpec("m", "python", masked, function="batch_equivalence:mask"),
            TransformSpec("tag", "insert_header", ORDERS, header="origin", value=b"A"),
        ]
    )


def test_a_batch_gives_each_record_what_the_chain_gives_it_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Steps over a batch's records at once, each only on the records its predicate picks: the same records, in
    the same order, as the chain applied to each record on its own."""
    _module(tmp_path, monkeypatch, "batch_equivalence", MASKING)
    alone = [_chain().apply(record) for record in _batch_of_records()]
    records = _batch_of_records()
    chained = _chain().apply_batch(records, [r.offset for r in records], "A.orders", 0)
    assert chained.records == [r for r in alone if r is not None]
    assert chained.offsets == [r.offset for r in alone if r is not None] == [10, 12, 14, 15]
    assert (chained.changed, chained.failed_at) == (True, None)


def test_a_batch_nothing_changes_keeps_its_records_as_they_came(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _module(tmp_path, monkeypatch, "batch_equivalence", MASKING)
    records = [MirrorRecord("A.other", 0, i, b"k", b"v", [("h", b"x")], 1_000) for i in range(3)]
    chained = _chain().apply_batch(records, [0, 1, 2], "A.other", 0)
    assert chained.changed is False
    assert all(kept is given for kept, given in zip(chained.records, records, strict=True))


def test_a_transform_failing_inside_a_batch_keeps_the_records_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Python step picks 12 and 13 (`mask` header) and fails on 13: 10 and 11, which it does not pick, and 12
    go on through the rest of the chain; nothing from 13 on is kept."""
    _module(tmp_path, monkeypatch, "batch_equivalence", MASKING)
    values = [b"a", b"b", b"c", b"fail", b"d"]
    records = [
        MirrorRecord("A.orders", 0, 10 + i, b"k", value, [("mask", b"1")] if i in (2, 3) else [], 1_000)
        for i, value in enumerate(values)
    ]
    chained = _chain().apply_batch(records, [r.offset for r in records], "A.orders", 0)
    assert [(r.offset, r.value, r.headers[-1]) for r in chained.records] == [
        (10, b"a", ("origin", b"A")),
        (11, b"b", ("origin", b"A")),
        (12, b"C", ("origin", b"A")),
    ]
    assert chained.failed_at == 13
    assert "transform m (batch_equivalence:mask) raised ValueError: cannot mask" in (chained.failure or "")


def _module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, source: str) -> None:
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
