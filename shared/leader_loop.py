"""Run one flow's periodic job on the single instance that holds the flow's lease (topic-sync, acl-sync).

Invariants: only the lease holder runs rounds; a new holder starts from a clean job state (`became_leader`);
a round's failures never stop the loop: each is counted by kind, logged when it first appears (not every
round), and shown in the status until a clean round clears it; a clean round sets the last-success time.
Status goes to `strait.status.internal` on the flow's target every `status_interval_s` (from its own task, so
a round stuck on an unreachable cluster does not silence it), at once on a leadership change or when a round
starts or stops failing, and a last time as "stopped" from `close()`. With a ClusterWatch, a flow cluster that
does not answer makes the status "degraded" and names the cluster, before the round's own timeout expires.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import structlog
from prometheus_client import CollectorRegistry, Counter, Gauge

from shared.cluster_watch import ClusterWatch
from shared.config import FlowConfig
from shared.control import ControlPublisher, StatusReporter
from shared.control.status_reporter import State
from shared.errors import AuthorizationError, ConfigError, KafkaOperationError, StraitError
from shared.flow_topics import FlowTopics
from shared.lease import ShardLease

OPEN_RETRY_S = 5.0


class LeaderJob(Protocol):
    """The work of one flow that exactly one instance does at a time."""

    def became_leader(self) -> None:
        """Forget everything cached: another instance may have acted while this one stood by."""
        ...

    async def run_round(self) -> Sequence[StraitError]:
        """Do one round; return the failures of single items, raise a StraitError if the round failed."""
        ...

    def interval_s(self) -> float:
        """Seconds from the start of one round to the start of the next."""
        ...

    def details(self) -> dict[str, Any]:
        """Figures for the status record (counts, last changes, notices)."""
        ...


@dataclass(frozen=True, slots=True)
class LeaderMetrics:
    """The metrics every leader-run service has, under its own prefix (labels: flow)."""

    leader: Gauge
    rounds: Counter
    errors: Counter
    last_success: Gauge

    @classmethod
    def create(cls, registry: CollectorRegistry, prefix: str) -> LeaderMetrics:
        """Register `<prefix>_leader`, `_rounds_total`, `_errors_total` and `_last_success_timestamp_seconds`."""
        return cls(
            leader=Gauge(
                f"{prefix}_leader", "1 while this instance is the flow's active instance", ["flow"], registry=registry
            ),
            rounds=Counter(f"{prefix}_rounds", "sync rounds run by this instance", ["flow"], registry=registry),
            errors=Counter(
                f"{prefix}_errors",
                "sync failures by kind (authorization, kafka, ...) and operation",
                ["flow", "kind", "operation"],
                registry=registry,
            ),
            last_success=Gauge(
                f"{prefix}_last_success_timestamp_seconds",
                "when the last round without any failure ended (epoch seconds)",
                ["flow"],
                registry=registry,
            ),
        )


def error_kind(exc: BaseException) -> str:
    """A short, bounded label for a failure: authorization, kafka, config or other."""
    if isinstance(exc, AuthorizationError):
        return "authorization"
    if isinstance(exc, KafkaOperationError):
        return "kafka"
    if isinstance(exc, ConfigError):
        return "config"
    return "other"


class LeaderLoop:
    """One flow of a leader-run service: lease, rounds while leader, status and error bookkeeping."""

    def __init__(
        self,
        *,
        service: str,
        flow: FlowConfig,
        job: LeaderJob,
        publisher: ControlPublisher,
        metrics: LeaderMetrics,
        instance_id: str,
        status_interval_s: float = 5.0,
        replication_factor: int = -1,
        watch: ClusterWatch | None = None,
    ) -> None:
        self.flow = flow
        self._watch = watch
        self._job = job
        self._publisher = publisher
        self._metrics = metrics
        self._status_interval_s = status_interval_s
        self.log = structlog.get_logger(service).bind(flow=flow.name)
        names = FlowTopics.for_flow(flow)
        self._lease = ShardLease(
            flow.target_cluster.consumer_props(),
            group_id=names.lease_group(service),
            topic=names.lease_topic(service),
            shards=1,
            replication_factor=replication_factor,
            instance_id=instance_id,
        )
        # Statuses are keyed by instance on a compacted topic: one key per flow, so flows sharing a
        # target cluster do not overwrite each other's status.
        self._reporter = StatusReporter(
            [publisher], service=service, instance=f"{instance_id}/{flow.name}", flow=flow.name, snapshot=self._snapshot
        )
        self._stop = asyncio.Event()
        self._opened = False
        self._publisher_started = False
        self.is_leader = False
        self.last_error: str | None = None
        self._active_errors: set[str] = set()
        self._last_success_ts: int | None = None

    @property
    def opened(self) -> bool:
        """True once the lease and the control publisher are up."""
        return self._opened

    # -- lifecycle -------------------------------------------------------------------------------
    async def run(self) -> None:
        """Open, then run rounds while leader, until `request_stop`; status goes out meanwhile from its own task."""
        if not await self._open():
            return
        # A round can wait a long time on a cluster that stopped answering: the status must not wait with it.
        reporting = asyncio.create_task(self._report_periodically(), name=f"status:{self.flow.name}")
        try:
            next_round = 0.0
            while not self._stop.is_set():
                if self._lease.is_leader != self.is_leader:
                    self._leadership_changed()
                    next_round = 0.0
                    await self._publish_status()
                if self.is_leader and time.monotonic() >= next_round:
                    started = time.monotonic()
                    error_before = self.last_error
                    await self._round()
                    next_round = started + self._job.interval_s()
                    if self.last_error != error_before:
                        await self._publish_status()  # failing or recovered: say so now
                wake = next_round if self.is_leader else time.monotonic() + self._status_interval_s
                await self._wait(wake - time.monotonic())
        finally:
            reporting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reporting

    async def _report_periodically(self) -> None:
        """Every `status_interval_s`: probe the flow's clusters (if watched), then publish the status."""
        while not self._stop.is_set():
            if self._watch is not None:
                await self._watch.probe_async()
            await self._publish_status()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), timeout=self._status_interval_s)

    def request_stop(self) -> None:
        """Make `run` return after its current step."""
        self._stop.set()

    async def close(self) -> None:
        """Leave the lease (a standby takes over at once), publish the final "stopped" status, disconnect."""
        self._stop.set()
        was_leader = self.is_leader
        await self._lease.stop()
        self.is_leader = False
        self._metrics.leader.labels(self.flow.name).set(0)
        if self._publisher_started:
            await self._publish_status("stopped")
            await self._publisher.stop()
            self._publisher_started = False
        if was_leader:
            self.log.info("leadership_released")

    async def _open(self) -> bool:
        """Start the publisher and join the lease, retrying while the target is unreachable or forbids it."""
        reported: str | None = None
        while not self._stop.is_set():
            try:
                if not self._publisher_started:
                    await self._publisher.start()
                    self._publisher_started = True
                await self._lease.start()
            except StraitError as exc:
                if not exc.retriable:
                    raise
                self._count(exc)
                self.last_error = str(exc)
                if str(exc) != reported:
                    reported = str(exc)
                    self.log.warning("open_failed", error=str(exc), error_type=type(exc).__name__, retry_s=OPEN_RETRY_S)
                await self._wait(OPEN_RETRY_S)
                continue
            self._opened = True
            self.last_error = None
            self._metrics.leader.labels(self.flow.name).set(0)
            self.log.info("standing_by", lease_group=self._lease.group_id, lease_topic=self._lease.topic)
            return True
        return False

    # -- rounds ----------------------------------------------------------------------------------
    def _leadership_changed(self) -> None:
        self.is_leader = self._lease.is_leader
        self._metrics.leader.labels(self.flow.name).set(1 if self.is_leader else 0)
        if self.is_leader:
            self._job.became_leader()
            self.log.info("leadership_acquired")
        else:
            self.log.info("leadership_lost")

    async def _round(self) -> None:
        try:
            errors = list(await self._job.run_round())
        except StraitError as exc:
            errors = [exc]
        self._metrics.rounds.labels(self.flow.name).inc()
        self._note(errors)

    def _count(self, exc: BaseException) -> None:
        operation = getattr(exc, "operation", "") or "unknown"
        self._metrics.errors.labels(self.flow.name, error_kind(exc), operation).inc()

    def _note(self, errors: Sequence[StraitError]) -> None:
        """Count every failure; log only new ones; a clean round clears the status error."""
        messages = {str(exc) for exc in errors}
        for exc in errors:
            self._count(exc)
            if str(exc) not in self._active_errors:
                self.log.warning(
                    "sync_failed",
                    error=str(exc),
                    error_type=type(exc).__name__,
                    kind=error_kind(exc),
                    operation=getattr(exc, "operation", None),
                    resource=getattr(exc, "resource", None),
                    retry_s=self._job.interval_s(),
                )
        if errors:
            self.last_error = str(errors[-1])
        else:
            if self._active_errors:
                self.log.info("sync_recovered")
            self.last_error = None
            self._last_success_ts = int(time.time() * 1000)
            self._metrics.last_success.labels(self.flow.name).set(time.time())
        self._active_errors = messages

    # -- status ----------------------------------------------------------------------------------
    def _snapshot(self) -> tuple[State, str | None, dict[str, Any]]:
        state: State = "starting" if not self._opened else ("degraded" if self.last_error else "running")
        details = {
            "role": "leader" if self.is_leader else "standby",
            "last_success_ts": self._last_success_ts,
            **self._job.details(),
        }
        down = self._watch.errors([self.flow.source, self.flow.target]) if self._watch is not None else []
        if down and self._opened:  # the round may still be waiting for its timeout: the probe knows already
            details["unreachable"] = down
            return "degraded", down[0], details
        return state, self.last_error, details

    async def _publish_status(self, state: State | None = None) -> None:
        try:
            await self._reporter.publish(state)
        except Exception as exc:  # status is best effort: a broker hiccup must not stop the sync
            self.log.warning("status_publish_failed", error=str(exc), error_type=type(exc).__name__)

    async def _wait(self, timeout_s: float) -> None:
        """Sleep up to `timeout_s`, waking early on stop or a lease change."""
        self._lease.changed.clear()
        if self._stop.is_set() or self._lease.is_leader != self.is_leader or timeout_s <= 0:
            return
        await self._lease.wait_change(self._stop, timeout_s)
