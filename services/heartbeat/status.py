"""The status record of one served flow of the heartbeat service, on `strait.status.internal` of its target."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from services.heartbeat.emitter import HeartbeatEmitter
from services.heartbeat.monitor import FlowMonitor
from shared.control import StatusReporter
from shared.control.status_reporter import State
from shared.flow_context import FlowContext

SERVICE = "heartbeat"


class HeartbeatStatus:
    """A served flow's status, through the one status publisher: degraded with reason "stalled" while mirrored
    heartbeats stopped arriving. Its publisher opens at the first publication (the target may be down at start)."""

    def __init__(
        self,
        context: FlowContext,
        instance_id: str,
        monitor: FlowMonitor | None,
        emitters: Sequence[HeartbeatEmitter],
    ) -> None:
        flow = self.flow = context.flow
        self.monitor = monitor
        # The pairs that write into this flow's clusters: the reverse pair fills the source's heartbeats.
        self._emitters = [e for e in emitters if e.cluster in (flow.source, flow.target)]
        self.publisher = context.publisher()
        self.opened = False
        self.reporter = StatusReporter(
            [self.publisher], service=SERVICE, instance_id=instance_id, flow=flow.name, snapshot=self.snapshot
        )
        self.watch = context.watch()
        self._lock = asyncio.Lock()  # the liveness check and the periodic status both publish

    def snapshot(self) -> tuple[State, str | None, dict[str, Any]]:
        """State, last error and figures as this process sees them now."""
        details: dict[str, Any] = {"emitting": {e.pair.name: e.details() for e in self._emitters}}
        # An unreachable cluster first: it names the cluster, and it is usually why heartbeats fail or stall.
        errors = self.watch.errors([self.flow.source, self.flow.target])
        errors += [f"{e.pair.name}: {e.last_error}" for e in self._emitters if e.last_error]
        state: State = "running"
        if self.monitor is None:
            details["liveness"] = "not watched (no heartbeats reach the source, or heartbeats are not replicated)"
        else:
            details.update(self.monitor.details())
            if self.monitor.state == "stalled":
                state = "degraded"
                details["reason"] = "stalled"
                age, limit = details.get("heartbeat_age_s"), self.monitor.liveness.stall_after_ms / 1000
                newest = "none arrived yet" if age is None else f"the newest is {age:g}s old"
                errors.append(f"mirrored heartbeats stalled in {self.monitor.topic}: {newest} (limit {limit:g}s)")
            elif self.monitor.state == "waiting":
                state = "starting"
        if errors and state == "running":
            state = "degraded"
        return state, errors[0] if errors else None, details

    async def publish(self, state: State | None = None) -> None:
        """Open the publisher if needed, then publish; never raises (a broker hiccup must not stop the heartbeats)."""
        async with self._lock:
            if not self.opened:
                try:
                    await self.publisher.start()
                except Exception as exc:
                    self.reporter.failed(exc)
                    return
                self.opened = True
            await self.reporter.publish(state)

    async def close(self) -> None:
        """Publish the final "stopped" status and disconnect."""
        if self.opened:
            await self.publish("stopped")
            await self.publisher.stop()
            self.opened = False
