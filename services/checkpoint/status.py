"""The status record of one checkpoint flow on `strait.status.internal` of its target."""

from __future__ import annotations

from typing import Any, Protocol

from services.checkpoint.checkpoint_table import CheckpointTable
from services.checkpoint.offset_syncer import GroupOffsetSyncer
from shared.cluster_watch import ClusterWatch
from shared.config import FlowConfig
from shared.control import ControlPublisher, StatusReporter
from shared.control.status_reporter import State
from shared.dr.state_watch import FlowStateWatch
from shared.lease import ShardLease

SERVICE = "checkpoint"
# Names of active target groups shown in the status; the count is always complete.
ACTIVE_SAMPLE = 20


class CheckpointFlowView(Protocol):
    """What the status reads from a checkpoint flow (FlowCheckpointer); the flow imports this module, not back."""

    flow: FlowConfig
    opened: bool
    last_error: str | None
    checkpoints_topic: str
    offset_syncs_topic: str
    lease: ShardLease
    relevant_groups: list[str]
    table: CheckpointTable
    checkpoints_written: int
    misses: int
    last_round_ms: float | None
    syncer: GroupOffsetSyncer | None
    watch: ClusterWatch
    dr: FlowStateWatch

    @property
    def translating(self) -> bool: ...

    @property
    def streaming(self) -> bool: ...

    def group_rpo(self) -> dict[str, float]: ...


GROUP_RPO_SHOWN = 20


def group_rpo_details(behind: dict[str, float]) -> dict[str, Any]:
    """How many groups' checkpoints stand for an older commit than their last, the oldest, and the worst named."""
    worst = sorted(behind.items(), key=lambda item: (-item[1], item[0]))
    return {
        "groups_behind": len(behind),
        "max_age_s": worst[0][1] if worst else 0.0,
        "most_behind": [{"group": group, "age_s": age} for group, age in worst[:GROUP_RPO_SHOWN]],
    }


class CheckpointStatus:
    """What a checkpoint flow reports of itself, through the one status publisher."""

    def __init__(self, flow: CheckpointFlowView, instance_id: str, publisher: ControlPublisher) -> None:
        self._flow = flow
        self.reporter = StatusReporter(
            [publisher], service=SERVICE, instance_id=instance_id, flow=flow.flow.name, snapshot=self.snapshot
        )

    def snapshot(self) -> tuple[State, str | None, dict[str, Any]]:
        """State, last error and figures as the flow sees them now."""
        flow = self._flow
        state: State
        if not flow.opened or not flow.translating:
            state = "starting"
        elif flow.last_error:
            state = "degraded"
        else:
            state = "running"
        details: dict[str, Any] = {
            "checkpoints_topic": flow.checkpoints_topic,
            "offset_syncs_topic": flow.offset_syncs_topic,
            "offset_syncs_read_to_end": flow.translating,
            "owned_shards": sorted(flow.lease.owned),
            "shards": flow.lease.shards,
            "groups": len(flow.relevant_groups),
            "partitions": flow.table.partition_count(flow.relevant_groups),
            "checkpoints_written": flow.checkpoints_written,
            "translation_misses": flow.misses,
            "last_round_ms": flow.last_round_ms,
            "group_offsets_from": "stream" if flow.streaming else "poll",
            "group_rpo": group_rpo_details(flow.group_rpo()) if flow.streaming else None,
        }
        if flow.syncer is not None:
            active = flow.syncer.active.states()
            details["group_offset_sync"] = {
                "partitions_moved": flow.syncer.partitions_synced,
                "active_target_groups": len(active),
                "active_target_groups_sample": dict(sorted(active.items())[:ACTIVE_SAMPLE]),
            }
        details.update(flow.dr.details())
        if not flow.dr.may_run:  # failed over (or not known yet): no checkpoints, no group moves
            return "paused", None, details
        down = flow.watch.errors([flow.flow.source, flow.flow.target])
        if down and flow.opened:  # a round may still be waiting for its timeout: the probe knows already
            details["unreachable"] = down
            return "degraded", down[0], details
        return state, flow.last_error, details
