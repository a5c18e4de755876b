"""checkpoint: for every served flow, translate committed group offsets into MM2 checkpoints on the target."""

from __future__ import annotations

import asyncio
from typing import Any

from prometheus_client import CollectorRegistry

from services.checkpoint.flow import FlowCheckpointer
from services.checkpoint.metrics import CheckpointMetrics
from services.checkpoint.settings import CheckpointSettings
from shared.config import MirrorMakerConfig
from shared.leader_service import selected_flows
from shared.service import Service

DRAIN_TIMEOUT_S = 30.0


class CheckpointService(Service):
    """One FlowCheckpointer per flow, each a background task; a crashed one stops the process."""

    name = "checkpoint"

    def __init__(self, flows: list[FlowCheckpointer]) -> None:
        super().__init__()
        self.flows = flows
        self._flow_tasks: list[asyncio.Task[None]] = []

    async def on_start(self) -> None:
        """Start every flow; each opens its clients and lease in the background."""
        for flow in self.flows:
            self._flow_tasks.append(self.spawn(flow.run(), f"flow:{flow.flow.name}"))

    async def before_cancel(self) -> None:
        """Let a running round finish (bounded) before the tasks are cancelled."""
        for flow in self.flows:
            flow.request_stop()
        if self._flow_tasks:
            await asyncio.wait(self._flow_tasks, timeout=DRAIN_TIMEOUT_S)

    async def on_stop(self) -> None:
        """Final status, leave leases, stop following, flush (reverse order of opening)."""
        for flow in reversed(self.flows):
            await flow.close()

    def readiness(self) -> tuple[bool, dict[str, Any]]:
        """Ready once every flow has read its checkpoints and offset syncs to their ends."""
        ready, details = super().readiness()
        translating = {flow.flow.name: flow.translating for flow in self.flows}
        return ready and all(flow.ready for flow in self.flows), {**details, "translating": translating}


def build(settings: CheckpointSettings, config: MirrorMakerConfig, registry: CollectorRegistry) -> CheckpointService:
    """The service for the flows `settings.flows` names, or every enabled flow."""
    metrics = CheckpointMetrics(registry)
    flows = [FlowCheckpointer(flow, settings, metrics) for flow in selected_flows(config, settings.flows)]
    return CheckpointService(flows)
