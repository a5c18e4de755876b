"""Periodic status of one service instance on `strait.status.internal` of every cluster it serves."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from shared.control.channel import ControlPublisher
from shared.control.events import ServiceStatus

State = Literal["starting", "running", "paused", "degraded", "stopped", "failed"]


class StatusReporter:
    """Builds a ServiceStatus from the service's own view (`snapshot`) and publishes it."""

    def __init__(
        self,
        publishers: Sequence[ControlPublisher],
        *,
        service: str,
        instance: str,
        flow: str,
        snapshot: Callable[[], tuple[State, str | None, Mapping[str, Any]]],
        release: str = "",
    ) -> None:
        self._publishers = list(publishers)
        self._service = service
        self._instance = instance
        self._flow = flow
        self._snapshot = snapshot
        self._release = release
        self._started_ts = int(time.time() * 1000)

    def build(self, state: State | None = None) -> ServiceStatus:
        """The status as it would be published now (`state` overrides the snapshot's)."""
        current, last_error, details = self._snapshot()
        return ServiceStatus(
            flow=self._flow,
            service=self._service,
            instance=self._instance,
            state=state or current,
            release=self._release,
            started_ts=self._started_ts,
            last_error=last_error,
            details=dict(details),
        )

    async def publish(self, state: State | None = None) -> None:
        """Publish to every cluster."""
        status = self.build(state)
        for publisher in self._publishers:
            await publisher.publish_status(status)
