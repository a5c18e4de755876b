"""heartbeat: emit MM2 heartbeats for every served flow's pairs and watch the mirrored ones on each target."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry

from services.heartbeat.emitter import HeartbeatEmitter
from services.heartbeat.metrics import HeartbeatMetrics
from services.heartbeat.monitor import FlowMonitor
from services.heartbeat.pairs import emitting_pairs, stall_after_s, watched_flows
from services.heartbeat.settings import HeartbeatSettings
from services.heartbeat.status import HeartbeatStatus
from shared.config import MirrorMakerConfig
from shared.flow_context import FlowContext
from shared.flow_selection import selected_flows
from shared.service import Service

CHECK_INTERVAL_S = 0.5


class HeartbeatService(Service):
    """Emitters run on their pair's interval; monitors follow the mirrored topics; statuses per served flow."""

    name = "heartbeat"

    def __init__(
        self,
        emitters: list[HeartbeatEmitter],
        monitors: list[FlowMonitor],
        reporters: list[HeartbeatStatus],
        *,
        status_interval_s: float,
    ) -> None:
        super().__init__()
        self.emitters = emitters
        self.monitors = monitors
        self.reporters = reporters
        self._status_interval_s = status_interval_s

    async def on_start(self) -> None:
        """Start emitting, following and reporting in the background (clusters may still be unreachable)."""
        for emitter in self.emitters:
            self.every(emitter.interval_s, emitter.emit, f"emit:{emitter.pair.name}")
        for monitor in self.monitors:
            self.spawn(monitor.follower.run(), f"follow:{monitor.topic}")
        self.every(CHECK_INTERVAL_S, self._check, "liveness")
        self.every(self._status_interval_s, self._publish_all, "status")

    async def _check(self) -> None:
        for reporter in self.reporters:
            if reporter.monitor is not None and reporter.monitor.check():
                await reporter.publish()  # a liveness change is reported at once, not at the next interval

    async def _publish_all(self) -> None:
        for reporter in self.reporters:
            await reporter.watch.probe_async()  # an unreachable cluster is reported before a write to it times out
            await reporter.publish()

    async def on_stop(self) -> None:
        """Final "stopped" statuses, then close the producers (reverse order of opening)."""
        for reporter in reversed(self.reporters):
            await reporter.close()
        for emitter in reversed(self.emitters):
            await emitter.close()

    def readiness(self) -> tuple[bool, dict[str, Any]]:
        """Ready while every emitter's last heartbeat was written."""
        ready, details = super().readiness()
        failing = [e.pair.name for e in self.emitters if e.last_error]
        liveness = {m.flow.name: m.state for m in self.monitors}
        return ready and not failing, {**details, "emit_failing": failing, "liveness": liveness}


def build(settings: HeartbeatSettings, config: MirrorMakerConfig, registry: CollectorRegistry) -> HeartbeatService:
    """The service for the flows `settings.flows` names, or every enabled flow."""
    metrics = HeartbeatMetrics(registry)
    flows = selected_flows(config, settings.flows)
    emitters = [HeartbeatEmitter(pair, metrics) for pair in emitting_pairs(config, flows)]
    watched = watched_flows(config, flows)
    contexts = {flow.name: FlowContext.of(flow) for flow in (*flows, *watched)}
    monitors = {
        flow.name: FlowMonitor(
            contexts[flow.name],
            metrics,
            stall_after_s=stall_after_s(
                config, flow, intervals=settings.stall_intervals, minimum_s=settings.stall_min_s
            ),
        )
        for flow in watched
    }
    reporters = [
        HeartbeatStatus(contexts[flow.name], settings.instance_id, monitors.get(flow.name), emitters) for flow in flows
    ]
    return HeartbeatService(emitters, list(monitors.values()), reporters, status_interval_s=settings.status_interval_s)
