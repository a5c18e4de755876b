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
    MirrorHandover,
    ServiceStatus,
    TopicsChanged,
)

_log = structlog.get_logger(__name__)

Event = TopicsChanged | ConfigChanged | FlowPaused | FlowResumed | MirrorHandover | ServiceStatus


def encode_event(event: BaseModel) -> bytes:
    """Compact UTF-8 JSON."""
    return event.model_dump_json().encode()


def decode_event(value: bytes | None, *, topic: str | None = None, offset: int | None = None) -> Event | None:
    """The event in `value`, or None (logged) for an unknown type, a newer version or malformed bytes.

    `topic` and `offset` say where the record was read, for the warning about a skipped one.
    """
    if value is None:
        return None  # a tombstone on the compacted status topic

    def skip(reason: str, **fields: object) -> None:
        _log.warning("control_event_skipped", topic=topic, offset=offset, reason=reason, **fields)

    try:
        raw = json.loads(value)
    except (ValueError, RecursionError) as exc:  # bad UTF-8 or JSON, a 5000-digit number, hostile nesting
        skip("not JSON", error=str(exc)[:200])
        return None
    if not isinstance(raw, dict):
        skip("not a JSON object")
        return None
    event_type = raw.get("type")
    model = EVENT_TYPES.get(event_type) if isinstance(event_type, str) else None
    if model is None:
        skip("unknown type", type=event_type)
        return None
    version = raw.get("version", 1)
    if not isinstance(version, int) or version > model.CURRENT_VERSION:
        skip("newer version", type=event_type, version=version)
        return None
    try:
        event = model.model_validate(raw)
    except ValidationError as exc:
        skip("invalid fields", type=event_type, errors=exc.error_count())
        return None
    assert isinstance(event, Event)
    return event
