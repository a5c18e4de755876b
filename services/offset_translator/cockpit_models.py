"""Response bodies of the cockpit's JSON (`/ui/` reads them; they are part of the OpenAPI schema like the rest)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from services.offset_translator.models import PartitionRpo
from shared.dr.records import TopicRpo
from shared.flow_status import FlowState

_Frozen = ConfigDict(frozen=True)

# ok: copying and proven; warn: look at it; down: nothing is copied, or records were lost; failed-over: a DR action
# stopped the flow on purpose.
Health = Literal["ok", "warn", "down", "failed-over"]


class AuditFigures(BaseModel):
    """What the flow's audit reports (its status record), summed over its live instances."""

    model_config = _Frozen
    verified: int = Field(description="records compared and found identical on both clusters")
    missing: int
    altered: int
    unexpected: int = Field(description="records on the target that no source record explains")
    duplicates: int
    expired_before_audit: int
    losses: list[str] = Field(description="where records were found missing or altered, by offset")


class FeedState(BaseModel):
    """Whether the translator still reads a cluster it follows: its answers about that cluster are stale if not."""

    model_config = _Frozen
    cluster: str
    stale: bool
    reason: str | None = Field(description="why the data from this cluster is stale")
    last_read_age_s: float | None = Field(
        description="seconds since the cluster last answered the translator's fetch of its status topic (one every "
        "half second, records or none); null before the first"
    )
    unreachable_since_ms: int | None = Field(description="when the cluster stopped answering the translator's probe")


class CockpitFlow(BaseModel):
    """One flow as the cockpit's overview shows it: state, recovery point, liveness, proof, and what is wrong."""

    model_config = _Frozen
    flow: str
    source: str
    target: str
    health: Health
    reasons: list[str] = Field(description="why the flow is not ok, worst first")
    state: FlowState
    copying: bool = Field(description="a live data-mirror instance reports the flow running")
    topics: int | None
    records_mirrored: int | None = Field(description="records data-mirror copied (its live instances' count)")
    rpo_records: int | None = Field(description="records a failover now would leave behind")
    rpo_seconds: float | None = Field(description="age of the oldest record not yet on the target")
    rpo_as_of_ms: int | None
    source_reachable: bool | None
    heartbeat_age_s: float | None = Field(description="age of the newest mirrored heartbeat")
    latency_ms: int | None = Field(description="replication latency of the newest heartbeat (heartbeat service)")
    checkpoint_age_s: float | None = Field(description="age of the newest checkpoint of any group")
    groups: int = Field(description="groups with checkpoints")
    groups_behind: int | None
    group_rpo_max_s: float | None
    audit: AuditFigures | None
    last_error: str | None
    dr_state: str | None
    stale: bool = Field(description="the translator lost the flow's target: the figures are as last read")


class Overview(BaseModel):
    """Every served flow and the state of the translator's feeds."""

    as_of_ms: int
    loaded: bool = Field(description="every flow's checkpoints and offset syncs were read to their end once")
    stale: bool = Field(description="some feed lost its cluster")
    flows: list[CockpitFlow]
    feeds: list[FeedState]


class HistorySample(BaseModel):
    """One sample of a flow, taken by the translator every history_interval_s."""

    model_config = _Frozen
    ts_ms: int
    rpo_records: int | None
    rpo_seconds: float | None
    heartbeat_age_s: float | None
    latency_ms: int | None


class FlowHistory(BaseModel):
    """A flow's recent samples, oldest first (kept in memory by this translator replica, the last hour)."""

    flow: str
    interval_s: float
    samples: list[HistorySample]


PartitionSort = Literal["topic", "records", "seconds", "next_offset", "end_offset"]


class PartitionPage(BaseModel):
    """A page of a flow's partitions (data-mirror's copy position against the source's end), filtered and sorted."""

    flow: str
    total: int = Field(description="partitions the flow copies")
    matched: int = Field(description="partitions the filter matched")
    offset: int
    limit: int
    sort: PartitionSort
    desc: bool
    topics: list[TopicRpo] = Field(description="every topic, most behind first")
    partitions: list[PartitionRpo]


class GroupSummary(BaseModel):
    """A consumer group's checkpoints on a flow: how many, and how fresh."""

    model_config = _Frozen
    group: str
    partitions: int
    newest_age_s: float
    oldest_age_s: float


class GroupPage(BaseModel):
    """A page of a flow's consumer groups, by name."""

    flow: str
    total: int
    matched: int
    offset: int
    limit: int
    groups: list[GroupSummary]
