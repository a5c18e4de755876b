"""JSON codec for control events; anything unreadable is skipped with a warning (or, for statuses, a CodecError
the reader skips), never a crash."""

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
from shared.control.status_figures import check_figures
from shared.errors import CodecError

_log = structlog.get_logger(__name__)

Event = TopicsChanged | ConfigChanged | FlowPaused | FlowResumed | MirrorHandover | ServiceStatus


def encode_event(event: BaseModel) -> bytes:
    """Compact UTF-8 JSON."""
    return event.model_dump_json().encode()


class UnusableEvent(CodecError):
    """A control record no reader of this release can use; `reason` says why in one word or two, `fields` more."""

    def __init__(self, reason: str, **fields: object) -> None:
        detail = ", ".join(f"{key}={value}" for key, value in fields.items())
        super().__init__(f"{reason} ({detail})" if detail else reason)
        self.reason = reason
        self.fields = fields


def parse_event(value: bytes) -> Event:
    """The event in `value`; UnusableEvent for malformed bytes, an unknown type, a newer version or invalid fields."""
    try:
        raw = json.loads(value)
    except (ValueError, RecursionError) as exc:  # bad UTF-8 or JSON, a 5000-digit number, hostile nesting
        raise UnusableEvent("not JSON", error=str(exc)[:200]) from None
    if not isinstance(raw, dict):
        raise UnusableEvent("not a JSON object")
    event_type = raw.get("type")
    model = EVENT_TYPES.get(event_type) if isinstance(event_type, str) else None
    if model is None:
        raise UnusableEvent("unknown type", type=str(event_type)[:100])
    version = raw.get("version", 1)
    if not isinstance(version, int) or version > model.CURRENT_VERSION:
        raise UnusableEvent("newer version", type=event_type, version=str(version)[:100])
    try:
        event = model.model_validate(raw)
    except ValidationError as exc:
        raise UnusableEvent("invalid fields", type=event_type, errors=exc.error_count()) from None
    assert isinstance(event, Event)
    return event


def decode_event(value: bytes | None, *, topic: str | None = None, offset: int | None = None) -> Event | None:
    """The event in `value`, or None (logged) for an unknown type, a newer version or malformed bytes.

    `topic` and `offset` say where the record was read, for the warning about a skipped one.
    """
    if value is None:
        return None  # a tombstone on the compacted status topic
    try:
        return parse_event(value)
    except UnusableEvent as exc:
        _log.warning("control_event_skipped", topic=topic, offset=offset, reason=exc.reason, **exc.fields)
        return None


def decode_status(value: bytes) -> ServiceStatus:
    """The status in a record of the status topic; CodecError for anything a status reader cannot use, the
    figures of `details` it reads included (`status_figures.py`), so each reader skips that record alone."""
    event = parse_event(value)
    if not isinstance(event, ServiceStatus):
        raise UnusableEvent("not a status", type=event.type)
    check_figures(event.details)
    return event
