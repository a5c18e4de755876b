"""The one status publisher: each served flow's status on `strait.status.internal` of the clusters it serves.

Every service reports through `StatusReporter`, so every status record is keyed the same way (`status_key`) and
published with the same rule: best effort (a status that cannot be written never stops the work), a failure logged
when it changes and once more when publishing recovers.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import structlog

from shared.control.channel import ControlPublisher
from shared.control.events import ServiceStatus
from shared.error_state import ErrorState

State = Literal["starting", "running", "paused", "degraded", "stopped", "failed"]
Snapshot = Callable[[], tuple[State, str | None, Mapping[str, Any]]]


def status_key(instance_id: str, flow: str) -> str:
    """`<instance>/<flow>`: the key of a flow's status on the compacted topic, one per flow of a process, so the
    flows of one process that share a target keep a record each."""
    return f"{instance_id}/{flow}"


class StatusReporter:
    """Builds a flow's ServiceStatus from the service's own view (`snapshot`) and publishes it."""

    def __init__(
        self,
        publishers: Sequence[ControlPublisher],
        *,
        service: str,
        instance_id: str,
        flow: str,
        snapshot: Snapshot,
        release: str = "",
    ) -> None:
        self._publishers = list(publishers)
        self._service = service
        self.instance = status_key(instance_id, flow)
        self._flow = flow
        self._snapshot = snapshot
        self._release = release
        self._started_ts = int(time.time() * 1000)
        self._errors = ErrorState(
            structlog.get_logger(service).bind(flow=flow), "status_publish_failed", "status_publish_recovered"
        )

    def build(self, state: State | None = None) -> ServiceStatus:
        """The status as it would be published now (`state` overrides the snapshot's)."""
        current, last_error, details = self._snapshot()
        return ServiceStatus(
            flow=self._flow,
            service=self._service,
            instance=self.instance,
            state=state or current,
            release=self._release,
            started_ts=self._started_ts,
            last_error=last_error,
            details=dict(details),
        )

    async def publish(self, state: State | None = None) -> bool:
        """Publish to every cluster; False (and `failure` says why) if one failed. Never raises."""
        try:
            status = self.build(state)
            for publisher in self._publishers:
                await publisher.publish_status(status)
        except Exception as exc:
            self.failed(exc)
            return False
        self.succeeded()
        return True

    @property
    def failure(self) -> str | None:
        """Why the last publication failed; None once one succeeded."""
        return self._errors.current

    def failed(self, exc: BaseException) -> None:
        """A publication failed (here or on a caller's own path, e.g. a synchronous one): log it if it is new."""
        self._errors.failed(exc)

    def succeeded(self) -> None:
        """A publication went through: say so once if it had been failing."""
        self._errors.cleared()
