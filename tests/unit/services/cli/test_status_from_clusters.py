"""`strait status --config`: the status topic read on each target, past records no reader can use."""

from __future__ import annotations

import json
from typing import Any

import pytest

from services.cli.status import statuses_from_clusters
from shared.control.events import now_ms
from shared.flow_selection import selected_flows
from shared.kafka.follow import FollowedRecord
from shared.records import Heartbeat
from tests.unit.services.offset_translator.conftest import make_config


def status_record(offset: int, instance: str, service: str, details: Any, ts: int | None = None) -> FollowedRecord:
    """A status record as any writer could put it on the topic, with fields no model checked."""
    body = {"type": "status", "version": 1, "flow": "A->B", "ts": now_ms() - 1000 if ts is None else ts,
            "service": service, "instance": instance, "state": "running", "details": details}  # fmt: skip
    return FollowedRecord(offset, instance.encode(), json.dumps(body).encode(), 0)


def test_a_malformed_status_record_hides_only_its_own_instance(monkeypatch: pytest.MonkeyPatch) -> None:
    records = [
        status_record(0, "dm-1", "data-mirror", {"records_behind": 3}),
        status_record(1, "dm-2", "data-mirror", {"stalled_partitions": 5}),
        status_record(2, "dm-1", "data-mirror", {"dr": ["failed-over"]}),
        status_record(3, "ts-1", "topic-sync", {"topics": 4}),
    ]
    monkeypatch.setattr("shared.control.status_reader.read_to_end", lambda *_, **__: records)
    monkeypatch.setattr("services.cli.status.last_record", lambda *_, **__: None)  # no mirrored heartbeat yet

    [status] = statuses_from_clusters(selected_flows(make_config()), stale_after_s=30)
    assert status.flow == "A->B"
    # dm-1 keeps its last good status; dm-2 never had one.
    shown = [(i.instance, i.records_behind, i.topics) for i in status.instances]
    assert shown == [("dm-1", 3, None), ("ts-1", None, 4)]
    assert status.state == "running"


def test_a_heartbeat_or_status_stamped_far_ahead_does_not_hide_a_stall(monkeypatch: pytest.MonkeyPatch) -> None:
    day_ahead = now_ms() + 86_400_000  # a hostile record, or an emitter whose clock jumped
    records = [
        status_record(0, "dm-1", "data-mirror", {}, ts=day_ahead),
        status_record(1, "ts-1", "topic-sync", {"topics": 4}),
    ]
    heartbeat = Heartbeat("A", "B", day_ahead)
    last = FollowedRecord(7, heartbeat.record_key(), heartbeat.record_value(), day_ahead)
    monkeypatch.setattr("shared.control.status_reader.read_to_end", lambda *_, **__: records)
    monkeypatch.setattr("services.cli.status.last_record", lambda *_, **__: last)

    [status] = statuses_from_clusters(selected_flows(make_config()), stale_after_s=30)
    assert status.heartbeat_age_s is None  # no heartbeat that can be believed
    assert status.state == "degraded"
    assert [(i.instance, i.stale) for i in status.instances] == [("dm-1", True), ("ts-1", False)]
    ahead_s = status.instances[0].clock_ahead_s
    assert ahead_s is not None
    assert ahead_s > 86_000
