"""The figures of `ServiceStatus.details` that readers act on, and the types they must have to be read.

The status topic is compacted: a record someone wrote with a figure of the wrong type (a string for a count, a
number for a list) stays there, and a reader that trusted it failed on every read, for every flow (`strait
status`, the translator's `/v1/status`). The status decoder checks these figures instead, and refuses such a record
as a CodecError, so a reader skips that one record. Other keys of `details` are passed on unchecked: readers take
them as informational, and a newer release may add some.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from shared.errors import CodecError


class _Figures(BaseModel):
    # strict: no bool for a count, no string for a number; a missing or null figure is "not reported".
    model_config = ConfigDict(strict=True, extra="allow")


class _DrFigure(_Figures):
    state: str | None = None
    since_ts: int | None = None
    report_id: str | None = None


class _AuditFigures(_Figures):
    missing: int | None = None
    altered: int | None = None
    unexpected: int | None = None
    losses: list[str] | None = None


class StatusFigures(_Figures):
    """What `shared/flow_status.py`, `shared/dr/readiness.py` and `shared/dr/failover.py` read from `details`."""

    records_behind: int | None = None
    topics: int | None = None
    tasks_running: int | None = None
    stalled_partitions: list[str | int] | None = None
    heartbeat_age_s: float | None = None
    rpo: dict[str, Any] | None = None  # its own fields are checked where it is read (RpoSummary)
    group_rpo: dict[str, Any] | None = None
    dr: _DrFigure | None = None
    audit: _AuditFigures | str | None = None  # the audit says "not started" before its first round


def check_figures(details: dict[str, Any]) -> None:
    """CodecError naming the first figure of `details` that has the wrong type; nothing if all can be read."""
    try:
        StatusFigures.model_validate(details)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(part) for part in first["loc"])
        raise CodecError(f"status details.{where}: {first['msg']}") from exc
