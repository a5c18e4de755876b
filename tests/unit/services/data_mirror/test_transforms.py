"""A flow's transform chain on single records: Connect's order, predicates and negation, and Python functions."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from services.data_mirror.transforms import MirrorRecord, TransformChain, TransformFailed, check_functions
from shared.config.transforms import PredicateSpec, TransformSpec
from shared.errors import ConfigError


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


def _module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, source: str) -> None:
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
