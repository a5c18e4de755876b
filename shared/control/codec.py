"""JSON codec for control events; anything unreadable is skipped with a warning, never a crash."""

from __future__ import annotations

import json

import structlog
from pydantic import BaseModel, ValidationError

from shared.control.events import (
    EVENT_TYPES,
    ConfigChanged,
    FlowPaused,
    FlowResumed,
    ServiceStatus,
    TopicsChanged,
)

_log = structlog.get_logger(__name__)

Event = TopicsChanged | ConfigChanged | FlowPaused | FlowResumed | ServiceStatus


def encode_event(event: BaseModel) -> bytes:
    """Compact UTF-8 JSON."""
    return event.model_dump_json().encode()


def decode_event(value: bytes | None) -> Event | None:
    """The event in `value`, or None (logged) for an unknown type, a newer version or malformed bytes."""
    if value is None:
        return None  # a tombstone on the compacted status topic
    try:
        raw = json.loads(value)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        _log.warning("control_event_skipped", reason="not JSON", error=str(exc))
        return None
    if not isinstance(raw, dict):
        _log.warning("control_event_skipped", reason="not a JSON object")
        return None
    event_type = raw.get("type")
    model = EVENT_TYPES.get(event_type) if isinstance(event_type, str) else None
    if model is None:
        _log.warning("control_event_skipped", reason="unknown type", type=event_type)
        return None
    version = raw.get("version", 1)
    if not isinstance(version, int) or version > model.CURRENT_VERSION:
        _log.warning("control_event_skipped", reason="newer version", type=event_type, version=version)
        return None
    try:
        event = model.model_validate(raw)
    except ValidationError as exc:
        _log.warning("control_event_skipped", reason="invalid fields", type=event_type, errors=exc.error_count())
        return None
    assert isinstance(event, TopicsChanged | ConfigChanged | FlowPaused | FlowResumed | ServiceStatus)
    return event
