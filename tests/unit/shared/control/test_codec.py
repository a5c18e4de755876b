"""Control events round-trip, and anything a reader cannot use is skipped rather than crashing it."""

from __future__ import annotations

import json
import re

import pytest

from shared.control import (
    ConfigChanged,
    FlowPaused,
    FlowResumed,
    MirrorHandover,
    RemoteTopic,
    ServiceStatus,
    TopicsChanged,
    decode_event,
    encode_event,
    progress_topic,
)
from shared.control.codec import decode_status
from shared.errors import CodecError


@pytest.mark.parametrize(
    "event",
    [
        TopicsChanged(flow="A->B", topics=(RemoteTopic(source_topic="orders", remote_topic="A.orders", partitions=6),)),
        ConfigChanged(flow="A->B", settings={"topics": "orders.*"}),
        FlowPaused(flow="A->B", reason="target refused WRITE on A.orders"),
        FlowResumed(flow="A->B"),
        MirrorHandover(flow="A->B", tasks=((0, 7), (3, 9))),
        ServiceStatus(flow="", service="checkpoint", instance="h-1", state="running", details={"groups": 3}),
    ],
)
def test_events_round_trip(event: object) -> None:
    encoded = encode_event(event)  # type: ignore[arg-type]
    decoded = decode_event(encoded)
    assert decoded == event
    body = json.loads(encoded)
    assert {"type", "version", "flow", "ts"} <= body.keys()


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"\xff\xfe not json", "not JSON"),
        (b"[1, 2]", "not a JSON object"),
        (b'{"type": "teleport", "version": 1, "flow": "A->B", "ts": 1}', "unknown type"),
        (b'{"type": "flow-resumed", "version": 2, "flow": "A->B", "ts": 1}', "newer version"),
        (
            b'{"type": "topics-changed", "version": 1, "flow": "A->B", "ts": 1, "topics": [{"source_topic": "x"}]}',
            "invalid fields",
        ),
    ],
)
def test_unusable_events_are_skipped_with_a_reason(raw: bytes, reason: str, capsys: pytest.CaptureFixture[str]) -> None:
    from shared.observability import configure_logging

    configure_logging("test", "INFO")
    assert decode_event(raw) is None
    logged = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert any(entry.get("event") == "control_event_skipped" and entry.get("reason") == reason for entry in logged)


def test_tombstones_decode_to_nothing() -> None:
    assert decode_event(None) is None


def test_older_version_fields_are_tolerated() -> None:
    raw = b'{"type": "flow-paused", "version": 1, "flow": "A->B", "ts": 5, "reason": "x", "added_later": true}'
    assert decode_event(raw) == FlowPaused(flow="A->B", ts=5, reason="x")


def test_strait_topic_names_are_internal_by_mm2_rules() -> None:
    assert progress_topic("us-west") == "strait.offsets.us-west.internal"
    assert progress_topic("A").endswith(".internal")


def test_a_hand_over_names_only_the_tasks_it_lists() -> None:
    decoded = decode_event(encode_event(MirrorHandover(flow="A->B", tasks=((0, 7), (3, 9)))))
    assert isinstance(decoded, MirrorHandover)
    assert decoded.names(0, 7)
    assert decoded.names(3, 9)
    assert not decoded.names(0, 8), "a later task of the same slot keeps running"
    assert not decoded.names(1, 7)


def status_bytes(details: object, **fields: object) -> bytes:
    body = {"type": "status", "version": 1, "flow": "A->B", "ts": 5, "service": "data-mirror", "instance": "dm-1",
            "state": "running", "details": details, **fields}  # fmt: skip
    return json.dumps(body).encode()


@pytest.mark.parametrize(
    "details",
    [
        {},
        {"records_behind": 3, "topics": 2, "tasks_running": 0, "stalled_partitions": ["orders-0", 7]},
        {"heartbeat_age_s": 1, "group_rpo": None, "rpo": {"records": 0}, "dr": {"state": "unknown", "note": "x"}},
        {"audit": "not started", "anything": ["else", {"goes": 1}]},
        {"audit": {"missing": 0, "altered": 0, "unexpected": 1, "losses": [], "verified": 9}},
    ],
)
def test_a_status_a_reader_can_use_decodes_as_it_was_written(details: dict[str, object]) -> None:
    status = decode_status(status_bytes(details))
    assert status == ServiceStatus(flow="A->B", ts=5, service="data-mirror", instance="dm-1", state="running",
                                   details=details)  # fmt: skip


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (status_bytes(["not", "a", "dict"]), "invalid fields"),
        (status_bytes("a string"), "invalid fields"),
        (status_bytes({}, state="asleep"), "invalid fields"),
        (status_bytes({"stalled_partitions": 5}), "details.stalled_partitions: Input should be a valid list"),
        (status_bytes({"stalled_partitions": "orders-0"}), "details.stalled_partitions"),
        (status_bytes({"records_behind": "many"}), "details.records_behind"),
        (status_bytes({"records_behind": True}), "details.records_behind"),
        (status_bytes({"heartbeat_age_s": "1s"}), "details.heartbeat_age_s"),
        (status_bytes({"dr": ["failed-over"]}), "details.dr"),
        (status_bytes({"dr": {"state": "failed-over", "since_ts": "yesterday"}}), "details.dr.since_ts"),
        (status_bytes({"audit": {"missing": "x"}}), "details.audit"),
        (b"\xff not json", "not JSON"),
        (encode_event(FlowResumed(flow="A->B", ts=5)), "not a status"),
    ],
)
def test_a_status_a_reader_cannot_use_is_a_codec_error(value: bytes, message: str) -> None:
    with pytest.raises(CodecError, match=re.escape(message)):
        decode_status(value)
