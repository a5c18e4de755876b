"""Transforms and provenance on the batch path: each fetched batch is decoded once and its records go through the
flow's chain; a batch none of whose records changed goes as it is, the others are re-encoded with each record's
source offset beside it, so every copied record is checked here by its offset on both sides (and its offset sync).

Driven as `test_batch_outcomes` drives a batch copy: a whole task (`fake_batch_link.run_task`), the real batch
producer in front of a target that checks sequences as Kafka does; what the task reports is read from its progress.
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from services.data_mirror.forwarding import CHANGED
from shared.config.transforms import PredicateSpec, TransformSpec
from shared.reshape.effect import ChainEffect, chain_effect
from shared.reshape.transforms import for_topic
from tests.unit.services.data_mirror.fake_batch_link import (
    KEY,
    REMOTE,
    FakeSource,
    FakeTarget,
    Headers,
    batch_spec,
    keys,
    run_task,
    stored,
)
from tests.unit.services.data_mirror.fake_kafka import FakeCluster, offset_syncs
from tests.unit.services.data_mirror.test_copy_task import SYNCS

TOMBSTONE = PredicateSpec("tombstone", "is_tombstone")
SECRET = PredicateSpec("secret", "has_header_key", "secret")
DROP_TOMBSTONES = TransformSpec("dropTombstones", "filter", TOMBSTONE)
STRIP = TransformSpec("strip", "drop_headers", SECRET, headers=("secret",))
TAG = TransformSpec("tag", "insert_header", header="origin", value=b"eu")


def _plain(base: int, count: int) -> bytes:
    return stored(base, [(f"v{base + i}".encode(), [("h", b"x")]) for i in range(count)])


# Batches of 100 records and 2 KiB are not merged (`forwarding.mergeable`) under a target batch.size of 1,000 bytes
UNMERGED = {"batch.size": "1000"}


def _copied(
    log: bytes, end: int, until: Callable[[FakeTarget], bool] | None = None, **changes: Any
) -> tuple[FakeTarget, FakeCluster]:
    """A whole task copying `log` (offsets up to `end`) with the task spec `changes` (batches of 100 records not
    merged unless they say otherwise), handed over once its progress reached `end` (or once `until(target)`
    holds): the target, and the offset syncs the task wrote."""
    source, target, syncs = FakeSource({KEY: log}), FakeTarget(), FakeCluster()
    spec = batch_spec(**{"target_producer": UNMERGED, **changes})
    done = until or (lambda target: any(progress.next_offset >= end for progress in target.progress()))
    assert run_task(spec, source, target, lambda: done(target), syncs=syncs).error is None
    return target, syncs


def _copies(target: FakeTarget) -> list[tuple[bytes | None, bytes | None, Headers]]:
    return [(r.key, r.value, list(r.headers)) for r in target.log(REMOTE, 0).records]


def test_a_batch_no_record_of_which_the_chain_changes_goes_as_it_is() -> None:
    """Every record is tested (no tombstone, no `secret` header): nothing changes, so every batch is forwarded."""
    target, _ = _copied(_plain(0, 100) + _plain(100, 100), 200, transforms=(DROP_TOMBSTONES, STRIP))
    assert target.keys() == keys(0, 200)
    assert (target.reported("forwarded"), target.reported("dropped")) == (200, 0)
    assert all(p.report is None or p.report.reencoded_reason is None for p in target.progress())


@pytest.mark.parametrize("batches", [1, 2], ids=["one batch", "two merged"])
def test_records_the_chain_changes_and_drops_are_checked_by_offset(batches: int) -> None:
    """Tombstones at 3 and 4 dropped, `secret` stripped from 7, `origin` added to every record kept: the target
    holds the kept records in order, each changed as the chain says, and each sync pairs a record's source offset
    with its offset on the target (the first record after the gap placed by a sync of its own). Two small batches
    are merged into one, their records through the chain together."""
    records: list[tuple[bytes | None, Headers]] = [(f"v{i}".encode(), [("h", b"x")]) for i in range(10)]
    records[3] = records[4] = (None, [("h", b"x")])
    records[7] = (b"v7", [("secret", b"s"), ("h", b"x")])
    split = 10 // batches
    log = b"".join(stored(base, records[base : base + split]) for base in range(0, 10, split))
    target, syncs = _copied(log, 10, transforms=(DROP_TOMBSTONES, STRIP, TAG), target_producer={})
    kept = [0, 1, 2, 5, 6, 7, 8, 9]
    assert _copies(target) == [(f"k{i}".encode(), f"v{i}".encode(), [("h", b"x"), ("origin", b"eu")]) for i in kept]
    by_target_offset = {downstream: upstream for downstream, upstream in enumerate(kept)}
    written = [(sync.upstream_offset, sync.downstream_offset) for sync, _ in offset_syncs(syncs, SYNCS)]
    assert written == [(0, 0), (2, 2), (5, 3), (9, 7)]
    assert all(by_target_offset[downstream] == upstream for upstream, downstream in written)
    opens = [segment.opens for _, segment in offset_syncs(syncs, SYNCS)]
    assert opens == [True, False, True, False], "the first record after the gap opens a stretch"
    assert len(target.log(REMOTE, 0).batches) == 1, "one batch for the target"
    assert (target.reported("dropped"), target.reported("forwarded")) == (2, 0)
    assert {p.report.reencoded_reason for p in target.progress() if p.report is not None} - {None} == {CHANGED}
    assert target.progress()[-1].next_offset == 10


def test_a_batch_whose_records_are_all_dropped_moves_the_position() -> None:
    """Nothing in flight: the commit passes the dropped records."""
    target, _ = _copied(stored(0, [(None, [])] * 10), 10, transforms=(DROP_TOMBSTONES,))
    assert target.keys() == []
    assert (target.progress()[-1].next_offset, target.reported("dropped")) == (10, 10)


def test_the_record_after_a_batch_whose_records_are_all_dropped_is_placed_afresh() -> None:
    log = stored(0, [(None, [])] * 10) + _plain(10, 10)
    target, syncs = _copied(log, 20, transforms=(DROP_TOMBSTONES,), target_producer={})
    assert target.keys() == keys(10, 20)
    written = [(sync.upstream_offset, sync.downstream_offset) for sync, _ in offset_syncs(syncs, SYNCS)]
    assert written == [(10, 0), (19, 9)]
    assert target.progress()[-1].next_offset == 20


def test_a_partition_a_topic_filter_drops_whole_is_never_decoded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Filter under TopicNameMatches on the remote topic is decided once per partition: every record of A.orders
    is dropped without decoding a batch, and the position passes them."""

    def no_decoding(*_args: Any) -> Any:
        raise AssertionError("a batch was decoded")

    monkeypatch.setattr("services.data_mirror.batch_sends.records_of", no_decoding)
    orders = TransformSpec("dropOrders", "filter", PredicateSpec("orders", "topic_matches", r"A\.orders"))
    target, _ = _copied(_plain(0, 100) + _plain(100, 100), 200, transforms=(orders,))
    assert target.keys() == []
    assert (target.progress()[-1].next_offset, target.reported("dropped")) == (200, 200)


def test_what_the_chain_does_to_a_partition_is_decided_once_from_its_remote_topic() -> None:
    orders = PredicateSpec("orders", "topic_matches", r"A\.orders")
    keep_orders = TransformSpec("keepOrders", "filter", orders, negate=True)
    python = TransformSpec("mask", "python", function="json:loads")
    assert for_topic((keep_orders, TAG), "A.orders") == (TAG,)
    assert for_topic((keep_orders, TAG), "A.payments") == (TransformSpec("keepOrders", "filter"), TAG)
    assert chain_effect(for_topic((keep_orders,), "A.orders"), provenance=False) is ChainEffect.NONE
    assert chain_effect(for_topic((keep_orders,), "A.payments"), provenance=False) is ChainEffect.DROPS_ALL
    assert chain_effect(for_topic((keep_orders,), "A.orders"), provenance=True) is ChainEffect.READS
    assert chain_effect((DROP_TOMBSTONES, STRIP), provenance=False) is ChainEffect.READS
    assert chain_effect((STRIP, TransformSpec("all", "filter")), provenance=False) is ChainEffect.DROPS_ALL
    assert chain_effect((python, TransformSpec("all", "filter")), provenance=False) is ChainEffect.READS, (
        "a Python transform before the Filter is still called (it may fail on a record)"
    )


def _module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, source: str) -> Any:
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop(name, None)
    return __import__(name)


def test_a_transform_that_fails_stops_its_partition_at_that_record_and_the_retry_copies_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The records before it are copied (4 is dropped by the Filter); the partition waits at 5, reported, and once
    its retry is due reads it again, where the transform now passes it."""
    module = _module(
        tmp_path,
        monkeypatch,
        "flaky_batch_masks",
        """
        failures = []
        def mask(record):
            if record.offset == 5 and not failures:
                failures.append(5)
                raise ValueError("not JSON")
            return record
        """,
    )
    records: list[tuple[bytes | None, Headers]] = [(f"v{i}".encode(), []) for i in range(10)]
    records[4] = (None, [])
    mask = TransformSpec("mask", "python", function="flaky_batch_masks:mask")
    target, _ = _copied(stored(0, records), 10, transforms=(DROP_TOMBSTONES, mask), blocked_retry_s=0)
    assert target.waited_at(5, "transform mask (flaky_batch_masks:mask) raised ValueError: not JSON")
    assert module.failures == [5]
    assert target.keys() == [f"k{i}".encode() for i in (0, 1, 2, 3, 5, 6, 7, 8, 9)], "each kept record, once, in order"
    final = target.progress()[-1]
    assert final.next_offset == 10
    assert final.report is None or final.report.blocked_offset is None


def test_a_python_transform_with_a_batch_function_is_called_once_per_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`mask.batch` takes a batch's records at once; a record it returns unchanged keeps its batch forwarded."""
    module = _module(
        tmp_path,
        monkeypatch,
        "batch_masks",
        """
        calls = {"record": 0, "batch": 0}
        def mask(record):
            calls["record"] += 1
            return record
        def mask_all(records):
            calls["batch"] += 1
            for record in records:
                if record.offset >= 100:
                    record.value = b"***"
            return [None if record.offset == 150 else record for record in records]
        mask.batch = mask_all
        """,
    )
    mask = TransformSpec("mask", "python", function="batch_masks:mask")
    target, _ = _copied(_plain(0, 100) + _plain(100, 100), 200, transforms=(mask,))
    assert module.calls == {"record": 0, "batch": 2}
    assert _copies(target) == [(f"k{i}".encode(), f"v{i}".encode(), [("h", b"x")]) for i in range(100)] + [
        (f"k{i}".encode(), b"***", [("h", b"x")]) for i in range(100, 200) if i != 150
    ]
    assert (target.reported("forwarded"), target.reported("dropped")) == (100, 1), "the first batch as it is"


def test_a_batch_function_that_fails_gives_way_to_the_function_which_names_the_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _module(
        tmp_path,
        monkeypatch,
        "broken_batch_masks",
        """
        def mask(record):
            if record.offset == 7:
                raise KeyError("email")
            record.value = b"***"
            return record
        def mask_all(records):
            for record in records:
                record.value = b"half done"
            raise RuntimeError("batch broken")
        mask.batch = mask_all
        """,
    )
    mask = TransformSpec("mask", "python", function="broken_batch_masks:mask")
    reason = "transform mask (broken_batch_masks:mask) raised KeyError: 'email'"
    target, _ = _copied(_plain(0, 10), 10, lambda target: target.waited_at(7, reason), transforms=(mask,))
    assert _copies(target) == [(f"k{i}".encode(), b"***", [("h", b"x")]) for i in range(7)]
    assert target.waited_at(7, reason)
    assert all(p.next_offset <= 7 for p in target.progress()), "progress never passes the record"


def test_with_provenance_each_first_copy_is_stamped_and_nothing_that_came_from_the_target_goes_back() -> None:
    """The record path's provenance rules on batches (`test_copy_task` has the same records): a record written at
    A gets `A:orders:0:<offset>`; one that came from B is not copied; one from C gets A as a hop."""
    origins: list[bytes | None] = [None, b"B:orders:0:7", None, b"C:orders:0:9", b"C:orders:0:10>B", b"not:valid"]
    records: list[tuple[bytes | None, Headers]] = []
    for i, origin in enumerate(origins):
        headers: Headers = [("h", b"v")]
        if origin is not None:
            headers.append(("strait.provenance", origin))
        records.append((f"v{i}".encode(), headers))
    target, _ = _copied(stored(0, records), 6, provenance=True)
    copied = [(r.value, dict(r.headers).get("strait.provenance")) for r in target.log(REMOTE, 0).records]
    assert copied == [
        (b"v0", b"A:orders:0:0"),
        (b"v2", b"A:orders:0:2"),
        (b"v3", b"C:orders:0:9>A"),
        (b"v5", b"not:valid"),
    ]
    assert (target.reported("returned"), target.reported("dropped"), target.progress()[-1].next_offset) == (2, 0, 6)
