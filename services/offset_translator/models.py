"""Request and response bodies of the translator's API (they are the OpenAPI schema)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from shared.dr.failover import group_pattern
from shared.dr.records import DrReport, FlowDrState, RpoSummary
from shared.errors import ConfigError
from shared.flow_status import FlowStatus, InstanceSummary

__all__ = [
    "ClusterList",
    "DrCheck",
    "DrFailbackRequest",
    "DrFailoverRequest",
    "FailoverPartition",
    "FailoverRequest",
    "FailoverResult",
    "FlowDr",
    "FlowInfo",
    "FlowList",
    "FlowRpo",
    "FlowStatus",
    "GroupList",
    "GroupOffsets",
    "Health",
    "InstanceSummary",
    "InvalidInput",
    "OffsetTranslation",
    "PartitionOffset",
    "PartitionRpo",
    "Problem",
    "StatusReport",
    "Topology",
]

_Frozen = ConfigDict(frozen=True)


class InvalidInput(BaseModel):
    """One part of a request that failed validation."""

    loc: list[str | int] = Field(description="where: body, query or path, then the field")
    msg: str
    type: str


class Problem(BaseModel):
    """An error, as RFC 9457 problem details (media type application/problem+json)."""

    type: str = Field(default="about:blank", description="a URI naming the kind of problem")
    title: str = Field(description="short summary of the kind of problem")
    status: int = Field(description="the HTTP status code")
    detail: str = Field(description="what went wrong with this request")
    errors: list[InvalidInput] | None = Field(default=None, description="each invalid input (422 only)")


class FlowInfo(BaseModel):
    """A served flow, where its internal topics live and whether they were read to their end."""

    model_config = _Frozen
    flow: str
    source: str
    target: str
    checkpoints_topic: str
    offset_syncs_topic: str
    offset_syncs_cluster: str
    checkpoints_loaded: bool
    offset_syncs_loaded: bool
    groups: int = Field(description="groups with at least one checkpoint")
    checkpoints: int = Field(description="group-partitions with a checkpoint")


class FlowList(BaseModel):
    """Every flow this translator serves."""

    flows: list[FlowInfo]


class GroupList(BaseModel):
    """Consumer groups that have checkpoints on a flow."""

    source: str
    target: str
    groups: list[str]


class PartitionOffset(BaseModel):
    """Where a group resumes on one remote topic-partition of the target (a checkpoint)."""

    model_config = _Frozen
    topic: str = Field(description="the remote topic on the target, e.g. A.orders")
    partition: int
    offset: int = Field(description="the translated (downstream) offset to resume from")
    upstream_offset: int = Field(description="the group's committed offset on the source")
    metadata: str = Field(description="the commit metadata carried over")
    checkpoint_age_ms: int = Field(description="milliseconds since the checkpoint was written")


class GroupOffsets(BaseModel):
    """A group's translated offsets on the target: MM2's RemoteClusterUtils.translateOffsets."""

    group: str
    source: str
    target: str
    checkpoints_topic: str
    offsets: list[PartitionOffset]


class OffsetTranslation(BaseModel):
    """One source offset translated through the offset syncs."""

    source: str
    target: str
    topic: str = Field(description="the topic on the source")
    partition: int
    offset: int = Field(description="the source (upstream) offset")
    remote_topic: str = Field(description="the topic's name on the target")
    downstream_offset: int = Field(description="Strait's translation: exact inside a gap-free run of syncs")
    mm2_downstream_offset: int | None = Field(
        description=(
            "what MM2's OffsetSyncStore would answer (never ahead); null where MM2 has no answer, e.g. an offset"
            " older than the one sync it keeps after a restart"
        )
    )


class Topology(BaseModel):
    """What a cluster's topic names tell about replication into it (MM2's MirrorClient)."""

    cluster: str
    upstream_clusters: list[str] = Field(description="clusters with heartbeats arriving here, any number of hops away")
    replication_hops: dict[str, int] = Field(description="fewest hops from each upstream cluster")
    heartbeat_topics: list[str]
    checkpoint_topics: list[str]
    remote_topics: list[str]
    remote_topics_by_source: dict[str, list[str]] = Field(
        description="remote topics replicated directly from each cluster"
    )
    listed_age_ms: int = Field(description="milliseconds since the topic names were listed")


class ClusterList(BaseModel):
    """Cluster aliases of the config."""

    clusters: list[str]


class StatusReport(BaseModel):
    """Replication status of every served flow."""

    flows: list[FlowStatus]


class FailoverRequest(BaseModel):
    """Move a group to the target: write its translated offsets there."""

    model_config = ConfigDict(extra="forbid")
    group: str = Field(min_length=1, max_length=32767, description="the consumer group", examples=["orders-app"])
    dry_run: bool = Field(default=False, description="compute and report, write nothing")
    allow_rewind: bool = Field(
        default=False, description="also move partitions where the group is already further ahead on the target"
    )


class FailoverPartition(BaseModel):
    """What the failover does for one remote topic-partition."""

    model_config = _Frozen
    topic: str
    partition: int
    offset: int = Field(description="the translated offset")
    previous_offset: int | None = Field(description="the group's committed offset on the target before, if any")
    action: Literal["set", "unchanged", "kept-ahead"] = Field(
        description="set: written (or would be, in a dry run); kept-ahead: the target offset is further and stays"
    )


class FailoverResult(BaseModel):
    """The outcome of a failover request."""

    group: str
    source: str
    target: str
    dry_run: bool
    applied: bool = Field(description="true when offsets were written")
    group_state: str = Field(description="the group's state on the target before the change")
    partitions: list[FailoverPartition]


class Health(BaseModel):
    """Liveness or readiness."""

    status: Literal["ok", "unavailable"]
    loading: list[str] = Field(default_factory=list, description="topics not yet read to their end")
    last_error: str | None = None


class PartitionRpo(BaseModel):
    """One source partition: its copy position against the source's end as last seen."""

    model_config = _Frozen
    topic: str
    partition: int
    next_offset: int = Field(description="the first source offset not on the target")
    end_offset: int | None = Field(description="the source's end as the copy task last saw it")
    records: int | None = Field(description="records not yet on the target")
    seconds: float | None = Field(description="age of the oldest record not yet on the target")
    as_of_ms: int | None = Field(description="when the copy task committed this position")


class FlowRpo(BaseModel):
    """What a failover now would leave behind on the source: per topic (and per partition when asked)."""

    flow: str
    source: str
    target: str
    rpo: RpoSummary
    partitions: list[PartitionRpo] | None = Field(default=None, description="with ?partitions=true")
    groups_behind: int | None = Field(default=None, description="groups whose checkpoint is older than their commit")
    group_rpo_max_s: float | None = Field(default=None, description="how much older, for the most-behind group")
    dr_state: str | None = Field(default=None, description="failed-over or active, once a DR action ran")
    note: str | None = None


class FlowDr(BaseModel):
    """A flow's durable DR state and its newest failover or failback report."""

    flow: str
    state: FlowDrState | None
    last_report: DrReport | None


class _DrRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    dry_run: bool = Field(default=False, description="read everything, change nothing, return the plan")
    timeout_s: float = Field(default=120.0, ge=1, le=3600, description="how long to wait for the copy to drain")
    groups: str | None = Field(
        default=None,
        max_length=1000,
        description="only groups matching this regex",
        json_schema_extra={"format": "regex"},
    )
    ignore_producers: bool = Field(default=False, description="go on although producers wrote lately")
    producers_quiet_s: float = Field(default=30.0, ge=0, le=86400)
    allow_rewind: bool = Field(default=False, description="also move partitions where a group stands further")

    @field_validator("groups")
    @classmethod
    def _a_regex(cls, groups: str | None) -> str | None:
        try:
            group_pattern(groups)
        except ConfigError as exc:
            raise ValueError(str(exc)) from exc
        return groups


class DrFailoverRequest(_DrRequest):
    """Fail the flow over: planned (drained to RPO 0, the source must answer) or unplanned."""

    planned: bool | None = Field(default=None, description="null: planned when the source answers")


class DrFailbackRequest(_DrRequest):
    """Fail the flow back once its source answers again."""

    tail: Literal["deliver", "skip"] = Field(
        default="deliver", description="the old primary's un-mirrored tail: read by the groups, or gone past"
    )


class DrCheck(BaseModel):
    """Could the flow fail over and back now? Nothing moves."""

    flow: str
    ready: bool
    problems: list[str]
