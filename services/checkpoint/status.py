"""The status record of one checkpoint flow on `strait.status.internal` of its target."""

from __future__ import annotations

from typing import Any, Protocol

from services.checkpoint.checkpoint_table import CheckpointTable
from services.checkpoint.offset_syncer import GroupOffsetSyncer
from shared.cluster_watch import ClusterWatch
from shared.config import FlowConfig
from shared.control import ControlPublisher, StatusReporter
from shared.control.status_reporter import State
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

    @property
    def translating(self) -> bool: ...

    @property
    def streaming(self) -> bool: ...


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
        }
        if flow.syncer is not None:
            active = flow.syncer.active.states()
            details["group_offset_sync"] = {
                "partitions_moved": flow.syncer.partitions_synced,
                "active_target_groups": len(active),
                "active_target_groups_sample": dict(sorted(active.items())[:ACTIVE_SAMPLE]),
            }
        down = flow.watch.errors([flow.flow.source, flow.flow.target])
        if down and flow.opened:  # a round may still be waiting for its timeout: the probe knows already
            details["unreachable"] = down
            return "degraded", down[0], details
        return state, flow.last_error, details
