"""One flow inside a service (a leader-run job's loop, a checkpoint flow), as a child unit of that service.

What every such unit does the same way lives here: open (status publisher first, then the unit's own topics,
clients and lease) with one retry policy while the target is unreachable; publish status from its own timer,
probing the flow's clusters first, so a round stuck on a silent cluster does not silence it; sleep until the
next round, waking early on stop or a lease change; and on stop let the running round finish (bounded), leave
the lease, close the unit's clients, publish a last "stopped" status and disconnect. A crash in any of its
tasks stops the parent service at once (shared/service.py). Every unit follows its flow's DR state (`dr`): a unit
moves nothing while the flow is failed over, or before that state is known.
"""

from __future__ import annotations

import asyncio

import structlog

from shared.control import ControlPublisher
from shared.control.status_reporter import State
from shared.dr.state_watch import FlowStateWatch
from shared.error_state import ErrorState
from shared.errors import StraitError
from shared.flow_context import FlowContext
from shared.lease import ShardLease
from shared.retry import Backoff, retry_async
from shared.service import Service

OPEN_BACKOFF = Backoff(first_s=5.0)
DRAIN_TIMEOUT_S = 30.0


class FlowUnit(Service):
    """Subclasses implement `open` (after the publisher started), `run_opened`, `release` and `publish_status`."""

    def __init__(
        self,
        *,
        service: str,
        context: FlowContext,
        lease: ShardLease,
        publisher: ControlPublisher,
        status_interval_s: float,
    ) -> None:
        self.name = f"{service}:{context.name}"
        super().__init__()
        self.context = context
        self.flow = context.flow
        self.log = structlog.get_logger(service).bind(flow=context.name)
        self.lease = lease
        self.watch = context.watch()
        self.dr = FlowStateWatch(context.flow)
        self._publisher = publisher
        self._publisher_started = False
        self._status_interval_s = status_interval_s
        self._main: asyncio.Task[None] | None = None
        self.opened = False
        self.last_error: str | None = None

    # -- what a unit does ------------------------------------------------------------------------
    async def open(self) -> None:
        """Create topics, build clients, start the lease; raise a StraitError (retriable ones are retried)."""

    async def run_opened(self) -> None:
        """The unit's work once open, until `stopping`; override."""

    async def release(self) -> None:
        """Close the unit's own clients, after the lease was left and before the last status; override."""

    async def publish_status(self, state: State | None = None) -> None:
        """Publish the unit's status now (best effort: never raises); override."""

    def open_failed(self, exc: StraitError) -> None:
        """Hear about a failed open before the retry (count it); override."""

    # -- lifecycle -------------------------------------------------------------------------------
    async def on_start(self) -> None:
        """Open and run in the background: a unit whose target is down waits for it without holding the service."""
        self.spawn(self.dr.run(), "dr-state")
        self._main = self.spawn(self._open_and_run(), "run")

    async def _open_and_run(self) -> None:
        if not await self._open_with_retry():
            return
        self.every(self._status_interval_s, self._report, "status")
        await self.run_opened()

    async def _open_with_retry(self) -> bool:
        opening = ErrorState(self.log, "open_failed", "opened_after_failures")

        def failed(exc: BaseException, retry_s: float) -> None:
            assert isinstance(exc, StraitError)
            self.open_failed(exc)
            self.last_error = str(exc)
            opening.failed(exc, retry_s=retry_s)

        opened = await retry_async(self._open_once, backoff=OPEN_BACKOFF, on_failure=failed, stop=self._stop_requested)
        if opened:
            self.opened = True
            self.last_error = None
            opening.cleared()
        return bool(opened)

    async def _open_once(self) -> bool:
        if not self._publisher_started:
            await self._publisher.start()
            self._publisher_started = True
        await self.open()
        return True

    async def _report(self) -> None:
        await self.watch.probe_async()
        await self.publish_status()

    async def before_cancel(self) -> None:
        """Let a running round finish (bounded) before the unit's tasks are cancelled."""
        if self._main is not None and not self._main.done():
            await asyncio.wait([self._main], timeout=DRAIN_TIMEOUT_S)

    async def on_stop(self) -> None:
        """Leave the lease (a standby takes over at once), close clients, last "stopped" status, disconnect."""
        await self.lease.stop()
        await self.release()
        if self._publisher_started:
            await self.publish_status("stopped")
            await self._publisher.stop()
            self._publisher_started = False
        self.opened = False

    # -- waiting ---------------------------------------------------------------------------------
    async def wait_round(
        self, timeout_s: float, *, lease_moved: bool = False, also: asyncio.Event | None = None
    ) -> None:
        """Sleep up to `timeout_s`, waking early on stop, when the lease changes (`lease_moved`: it already did),
        or when `also` is set."""
        self.lease.changed.clear()
        if self.stopping or lease_moved or timeout_s <= 0 or (also is not None and also.is_set()):
            return
        await self.lease.wait_change(self._stop_requested, timeout_s, *(() if also is None else (also,)))

    def unreachable(self) -> list[str]:
        """Why the flow's clusters do not answer, once open (a round may still wait for its timeout)."""
        return self.watch.errors([self.flow.source, self.flow.target]) if self.opened else []
