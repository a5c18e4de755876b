"""The audit on a flow with transforms: what the chain drops is counted, not missing; a record a transform fails on
in the audit is verified up to, then skipped and named, and the audit goes on past it."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from services.audit import watch
from services.audit.findings import LossFound, NotVerifiable
from services.audit.watch import AuditLimits, FlowAudit
from shared.config.transforms import TransformSpec
from shared.records.offset_sync import OffsetSync
from shared.records.progress import Progress
from shared.replication_policy import DefaultReplicationPolicy
from shared.verify.sync_index import SyncIndex
from tests.unit.services.audit.test_watch_rewind import _Follower, _Nothing
from tests.unit.shared.verify.test_expected import DROP_TOMBSTONES, FAILING, Row, _batch, _Entries, python_chain

KEY = ("orders", 0)


def _audit(
    monkeypatch: pytest.MonkeyPatch, source: _Entries, target: _Entries, chain: tuple[TransformSpec, ...]
) -> FlowAudit:
    sides = {"source": source, "target": target}
    monkeypatch.setattr(watch, "ProgressFollower", _Follower)
    monkeypatch.setattr(watch, "PartitionEntries", lambda props, **_kwargs: sides[props["side"]])
    monkeypatch.setattr(watch, "PartitionReader", _Nothing)
    monkeypatch.setattr(SyncIndex, "of_more", classmethod(lambda _cls, index, *_a: index))
    monkeypatch.setattr(watch, "load_progress", lambda *_a, **_k: {KEY: Progress(0)})
    marks = {KEY: (0, 10), ("A.orders", 0): (0, 9)}
    monkeypatch.setattr(watch, "committed_watermarks", lambda _props, keys, **_k: {key: marks[key] for key in keys})
    flow = SimpleNamespace(
        name="A->B",
        source="A",
        target="B",
        transforms=chain,
        settings=SimpleNamespace(provenance_enabled=False),
        source_consumer_props=lambda: {"side": "source"},
        target_consumer_props=lambda: {"side": "target"},
        source_admin_props=dict,
        target_admin_props=dict,
    )
    policy = DefaultReplicationPolicy()
    topics = SimpleNamespace(
        should_replicate=lambda _topic: True, policy=policy, remote_topic=lambda t: policy.format_remote_topic("A", t)
    )
    offset_syncs = SimpleNamespace(consumer_props=lambda _flow: {}, topic="syncs")
    context: Any = SimpleNamespace(flow=flow, topics=topics, progress_topic="progress", offset_syncs=offset_syncs)
    return FlowAudit(context, AuditLimits(budget_bytes=2**20, sample_percent=100, window=100, timeout_s=1))


def test_a_record_a_transform_fails_on_in_the_audit_is_skipped_and_named_and_the_rest_verified(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """2 is a tombstone (dropped); the mask fails here on 5, which data-mirror (elsewhere) copied as V5."""
    chain = (DROP_TOMBSTONES, *python_chain(tmp_path, monkeypatch, "failing_masks", FAILING, "mask"))
    rows: list[Row] = [(1_000 + i, f"k{i}".encode(), None if i == 2 else f"v{i}".encode(), []) for i in range(10)]
    copies = [(ts, key, (value or b"").upper(), headers) for ts, key, value, headers in rows if value is not None]
    audit = _audit(
        monkeypatch,
        _Entries({KEY: [_batch(0, rows[:6]), _batch(6, rows[6:])]}),
        _Entries({("A.orders", 0): [_batch(0, copies)]}),
        chain,
    )
    for sync in (OffsetSync("orders", 0, 0, 0), OffsetSync("orders", 0, 3, 2)):  # the second after the gap
        audit._syncs.add(sync)
    follower = audit._progress_follower
    assert isinstance(follower, _Follower)

    audit.round()  # watched from the mirror's position, 0
    follower.arriving = [(KEY, Progress(10))]
    audit.round()  # 0..4 verified (2 dropped), 5 skipped
    assert (audit.positions[KEY], audit.totals.verified, audit.totals.dropped) == (6, 4, 1)
    assert audit.totals.transform_failed == 1
    audit.round()  # 6..9, the target read again from the offset syncs
    totals = audit.totals
    assert (audit.positions[KEY], totals.verified, totals.missing, totals.altered, totals.unexpected) == (
        10,
        8,
        0,
        0,
        0,
    )
    (problem,) = totals.problems()
    assert isinstance(problem, NotVerifiable)
    assert "orders-0 at source offset 5: transform mask (failing_masks:mask) raised ValueError" in str(problem)
    assert not isinstance(problem, LossFound)
