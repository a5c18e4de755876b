"""What `strait.dr.internal` holds on a flow's target: the flow's durable state and the reports of its DR actions.

The topic is compacted: `state|<flow>` keeps the latest state of each flow, `report|<flow>|<id>` every report. A
flow whose state is `failed-over` is stopped for good: no service of that flow moves anything (no copy, no
checkpoint, no topic, config or ACL change) until a failback makes it `active` again, whoever restarts what
meanwhile. Like control events, a record of an unknown type or a newer version is skipped, never a crash.
"""

from __future__ import annotations

import json
from typing import ClassVar, Literal

import structlog
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from shared.control.events import now_ms

_log = structlog.get_logger(__name__)

FlowDrStateName = Literal["active", "failed-over"]
DrAction = Literal["failover", "failback"]


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")
    CURRENT_VERSION: ClassVar[int] = 1

    version: int = 1
    flow: str
    ts: int = Field(default_factory=now_ms)


class FlowDrState(_Record):
    """A flow's durable state: `failed-over` stops every service of the flow until a failback."""

    type: Literal["flow-state"] = "flow-state"
    state: FlowDrStateName
    action: DrAction | None = None
    report_id: str | None = Field(default=None, description="the report of the action that set this state")
    by: str = Field(default="", description="who asked (user, host, or the translator's client)")

    @property
    def stopped(self) -> bool:
        return self.state == "failed-over"


class PartitionPoint(BaseModel):
    """Where one partition stood when its flow failed over: the first source offset not on the target, and the
    target's end then (what the target holds of the partition ends there)."""

    model_config = ConfigDict(frozen=True)
    topic: str = Field(description="the source topic")
    partition: int
    remote_topic: str
    source_offset: int = Field(description="the first source offset not copied (data-mirror's committed position)")
    target_offset: int = Field(description="the remote partition's end on the target at the failover")
    source_end: int | None = Field(default=None, description="the source's end, as last known")
    records_behind: int | None = Field(default=None, description="source_end - source_offset: what the target lacks")


class TopicRpo(BaseModel):
    """What one topic's copy lacks: records and seconds not yet on the target."""

    model_config = ConfigDict(frozen=True)
    topic: str
    records: int
    seconds: float | None = Field(description="age of the oldest record not yet copied (0 when nothing is behind)")
    partitions_behind: int


class RpoSummary(BaseModel):
    """A flow's recovery point: what a failover now would leave behind on the source."""

    model_config = ConfigDict(frozen=True)
    records: int
    seconds: float | None
    partitions: int
    partitions_behind: int
    as_of_ms: int | None = Field(description="when the figures were last known to be current")
    source_reachable: bool | None = None
    topics: list[TopicRpo] = Field(default_factory=list)


class ProducerSeen(BaseModel):
    """An active producer on a source partition (DescribeProducers, KIP-664)."""

    model_config = ConfigDict(frozen=True)
    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    last_timestamp_ms: int
    age_s: float | None = Field(description="seconds since it last wrote (None: no timestamp)")


class PartitionMove(BaseModel):
    """What a group move does in one partition."""

    model_config = ConfigDict(frozen=True)
    topic: str
    partition: int
    offset: int = Field(description="the position written (or, in a dry run, to be written)")
    previous_offset: int | None = None
    action: Literal["set", "unchanged", "kept-ahead"]
    how: str = Field(
        default="checkpoint",
        description="checkpoint, reverse (back through the syncs), provenance, tail, end, start (no sync places "
        "it), log-start (what the syncs place it at is gone)",
    )


class GroupMove(BaseModel):
    """One consumer group moved to the cluster the flow fails over (or back) to."""

    model_config = ConfigDict(frozen=True)
    group: str
    cluster: str
    partitions: list[PartitionMove]


class GroupSkipped(BaseModel):
    """A group left where it is, and why."""

    model_config = ConfigDict(frozen=True)
    group: str
    reason: str


class TailRange(BaseModel):
    """Records written on the old primary that never reached the other cluster (kept there, never deleted)."""

    model_config = ConfigDict(frozen=True)
    topic: str
    partition: int
    first: int
    end: int = Field(description="exclusive")
    records: int
    choice: Literal["deliver", "skip"]


class DrReport(_Record):
    """The record of one failover or failback (a dry run's plan has the same shape and is never written)."""

    type: Literal["dr-report"] = "dr-report"
    id: str
    kind: DrAction
    planned: bool
    dry_run: bool
    by: str = ""
    started_ms: int
    ended_ms: int | None = None
    rpo: RpoSummary | None = None
    points: list[PartitionPoint] = Field(default_factory=list)
    producers: list[ProducerSeen] = Field(default_factory=list)
    groups_moved: list[GroupMove] = Field(default_factory=list)
    groups_skipped: list[GroupSkipped] = Field(default_factory=list)
    tail: list[TailRange] = Field(default_factory=list)
    copied_back: int | None = Field(default=None, description="failback: records of the other side copied back")
    notes: list[str] = Field(default_factory=list)


_TYPES: dict[str, type[_Record]] = {"flow-state": FlowDrState, "dr-report": DrReport}


def state_key(flow: str) -> bytes:
    return f"state|{flow}".encode()


def report_key(flow: str, report_id: str) -> bytes:
    return f"report|{flow}|{report_id}".encode()


def encode_record(record: FlowDrState | DrReport) -> bytes:
    """Compact UTF-8 JSON."""
    return record.model_dump_json().encode()


def decode_record(value: bytes | None, *, offset: int | None = None) -> FlowDrState | DrReport | None:
    """The record in `value`, or None (logged) for a tombstone, an unknown type, a newer version or bad bytes."""
    if value is None:
        return None
    try:
        raw = json.loads(value)
    except (ValueError, RecursionError) as exc:
        _log.warning("dr_record_skipped", offset=offset, reason="not JSON", error=str(exc)[:200])
        return None
    kind = raw.get("type") if isinstance(raw, dict) else None
    model = _TYPES.get(kind) if isinstance(kind, str) else None
    version = raw.get("version", 1) if model is not None else None
    if model is None or not isinstance(version, int) or version > model.CURRENT_VERSION:
        _log.warning("dr_record_skipped", offset=offset, reason="unknown type or newer version")
        return None
    try:
        record = model.model_validate(raw)
    except ValidationError as exc:
        _log.warning("dr_record_skipped", offset=offset, reason="invalid fields", errors=exc.error_count())
        return None
    assert isinstance(record, FlowDrState | DrReport)
    return record
