"""checkpoint: for every served flow, translate committed group offsets into MM2 checkpoints on the target."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry

from services.checkpoint.flow import FlowCheckpointer
from services.checkpoint.metrics import CheckpointMetrics
from services.checkpoint.settings import CheckpointSettings
from shared.config import MirrorMakerConfig
from shared.flow_context import FlowContext
from shared.flow_selection import selected_flows
from shared.service import Service


class CheckpointService(Service):
    """One FlowCheckpointer per flow, each a child unit: a crashed one stops the process at once."""

    name = "checkpoint"

    def __init__(self, flows: list[FlowCheckpointer]) -> None:
        super().__init__()
        self.flows = flows

    async def on_start(self) -> None:
        """Start every flow; each opens its clients and lease in the background."""
        for flow in self.flows:
            await self.start_child(flow)

    def readiness(self) -> tuple[bool, dict[str, Any]]:
        """Ready once every flow has read its checkpoints and offset syncs to their ends."""
        ready, details = super().readiness()
        translating = {flow.flow.name: flow.translating for flow in self.flows}
        return ready and all(flow.ready for flow in self.flows), {**details, "translating": translating}


def build(settings: CheckpointSettings, config: MirrorMakerConfig, registry: CollectorRegistry) -> CheckpointService:
    """The service for the flows `settings.flows` names, or every enabled flow."""
    metrics = CheckpointMetrics(registry, mm2_names=settings.mm2_metric_names)
    flows = [
        FlowCheckpointer(FlowContext.of(flow), settings, metrics) for flow in selected_flows(config, settings.flows)
    ]
    return CheckpointService(flows)
