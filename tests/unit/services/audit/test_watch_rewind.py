"""The audit follows the mirror's progress back: a range the mirror copies again is verified again."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from services.audit import watch
from services.audit.watch import AuditLimits, FlowAudit
from shared.records.progress import Progress
from shared.verify.sync_index import SyncIndex

KEY = ("orders", 0)


class _Follower:
    def __init__(self, *_args: Any, **_kwargs: Any) -> None:
        self.arriving: list[tuple[tuple[str, int], Progress]] = []

    def poll(self) -> list[tuple[tuple[str, int], Progress]]:
        arrived, self.arriving = self.arriving, []
        return arrived


class _Nothing:
    def __init__(self, *_args: Any, **_kwargs: Any) -> None:
        pass


def test_progress_moving_back_makes_the_audit_verify_again_from_the_lower_offset(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(watch, "ProgressFollower", _Follower)
    monkeypatch.setattr(watch, "PartitionEntries", _Nothing)
    monkeypatch.setattr(watch, "PartitionReader", _Nothing)
    monkeypatch.setattr(SyncIndex, "of_more", classmethod(lambda _cls, index, *_a: index))
    monkeypatch.setattr(watch, "load_progress", lambda *_a, **_k: {KEY: Progress(100)})
    no_transforms = {
        "source": "A",
        "target": "B",
        "transforms": (),
        "settings": SimpleNamespace(provenance_enabled=False),
    }
    flow = SimpleNamespace(name="A->B", source_consumer_props=dict, target_consumer_props=dict, **no_transforms)
    topics = SimpleNamespace(should_replicate=lambda _topic: True, policy=None)
    offset_syncs = SimpleNamespace(consumer_props=lambda _flow: {}, topic="syncs")
    context = SimpleNamespace(flow=flow, topics=topics, progress_topic="progress", offset_syncs=offset_syncs)
    audit = FlowAudit(context, AuditLimits(budget_bytes=2**20, sample_percent=100, window=100, timeout_s=1))  # type: ignore[arg-type]
    verified_from: list[int] = []
    monkeypatch.setattr(audit, "_verify", lambda due: verified_from.extend(audit.positions[k] for k in due))
    follower = audit._progress_follower
    assert isinstance(follower, _Follower)

    audit.round()  # watched from the mirror's position, 100
    follower.arriving = [(KEY, Progress(40))]  # the topic made again: the mirror copies from 40 again
    audit.round()
    assert audit.positions[KEY] == 40
    follower.arriving = [(KEY, Progress(60))]
    audit.round()
    assert verified_from == [40]  # 40..59 of the new copy is verified
    assert audit.totals.lag_records == 20
