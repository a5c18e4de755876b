"""Run one flow's periodic job on the single instance that holds the flow's lease (topic-sync, acl-sync).

Invariants: only the lease holder runs rounds; a new holder starts from a clean job state (`became_leader`);
a round's failures never stop the loop: each is counted by kind, logged when it first appears (not every
round), and shown in the status until a clean round clears it; a clean round sets the last-success time.
Status goes to `strait.status.internal` on the flow's target every `status_interval_s` (from its own task, so
a round stuck on an unreachable cluster does not silence it), at once on a leadership change or when a round
starts or stops failing, and a last time as "stopped" at stop. The flow's clusters are watched: one that does not
answer makes the status "degraded" and names the cluster, before the round's own timeout expires. The lifecycle
(open with retry, status timer, stop) is shared/flow_unit.py's.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge

from shared.control import ControlPublisher, StatusReporter
from shared.control.status_reporter import State
from shared.error_state import FlowHealth
from shared.errors import AuthorizationError, ConfigError, KafkaOperationError, StraitError
from shared.flow_context import FlowContext
from shared.flow_unit import FlowUnit

DR_LOOK_AGAIN_S = 1.0  # a leader whose flow may not run (failed over, DR state unread) looks again this often


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


class LeaderLoop(FlowUnit):
    """One flow of a leader-run service: lease, rounds while leader, status and error bookkeeping."""

    def __init__(
        self,
        *,
        service: str,
        context: FlowContext,
        job: LeaderJob,
        publisher: ControlPublisher,
        metrics: LeaderMetrics,
        instance_id: str,
        status_interval_s: float = 5.0,
    ) -> None:
        super().__init__(
            service=service,
            context=context,
            lease=context.lease(service, instance_id=instance_id),
            publisher=publisher,
            status_interval_s=status_interval_s,
        )
        self._job = job
        self._metrics = metrics
        self._reporter = StatusReporter(
            [publisher], service=service, instance_id=instance_id, flow=context.name, snapshot=self._snapshot
        )
        self.is_leader = False
        self._health = FlowHealth(self.log, "sync_failed", "sync_recovered")
        self._last_success_ts: int | None = None

    # -- lifecycle -------------------------------------------------------------------------------
    async def open(self) -> None:
        """Join the lease (the control publisher is already up)."""
        await self.lease.start()
        self._metrics.leader.labels(self.flow.name).set(0)
        self.log.info("standing_by", lease_group=self.lease.group_id, lease_topic=self.lease.topic)

    def open_failed(self, exc: StraitError) -> None:
        """Count the failure like a round's."""
        self._count(exc)

    async def run_opened(self) -> None:
        """Run rounds while leader, until stopping; status goes out meanwhile from its own timer."""
        next_round = 0.0
        while not self.stopping:
            if self.lease.is_leader != self.is_leader:
                self._leadership_changed()
                next_round = 0.0
                await self.publish_status()
            if self.is_leader and self.dr.may_run and time.monotonic() >= next_round:
                started = time.monotonic()
                error_before = self.last_error
                await self._round()
                next_round = started + self._job.interval_s()
                if self.last_error != error_before:
                    await self.publish_status()  # failing or recovered: say so now
            if not self.is_leader:
                wake = time.monotonic() + self._status_interval_s
            elif not self.dr.may_run:  # failed over, or its DR state not read yet: look again soon, never spin
                wake = time.monotonic() + min(DR_LOOK_AGAIN_S, self._status_interval_s)
            else:
                wake = next_round
            await self.wait_round(wake - time.monotonic(), lease_moved=self.lease.is_leader != self.is_leader)

    async def release(self) -> None:
        """The lease is left: this instance leads no more."""
        was_leader, self.is_leader = self.is_leader, False
        self._metrics.leader.labels(self.flow.name).set(0)
        if was_leader:
            self.log.info("leadership_released")

    # -- rounds ----------------------------------------------------------------------------------
    def _leadership_changed(self) -> None:
        self.is_leader = self.lease.is_leader
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
        for exc in errors:
            self._count(exc)
        self._health.note("round", errors, _described, retry_s=self._job.interval_s())
        self.last_error = self._health.last_error
        if not errors:
            self._last_success_ts = int(time.time() * 1000)
            self._metrics.last_success.labels(self.flow.name).set(time.time())

    # -- status ----------------------------------------------------------------------------------
    def _snapshot(self) -> tuple[State, str | None, dict[str, Any]]:
        state: State = "starting" if not self.opened else ("degraded" if self.last_error else "running")
        details = {
            "role": "leader" if self.is_leader else "standby",
            "last_success_ts": self._last_success_ts,
            **self._job.details(),
            **self.dr.details(),
        }
        if not self.dr.may_run:  # failed over (or not known yet): no rounds
            return "paused", None, details
        if down := self.unreachable():  # the round may still be waiting for its timeout: the probe knows already
            details["unreachable"] = down
            return "degraded", down[0], details
        return state, self.last_error, details

    async def publish_status(self, state: State | None = None) -> None:
        """Publish now (best effort: status must not stop the sync)."""
        await self._reporter.publish(state)


def _described(exc: BaseException) -> dict[str, Any]:
    """What a failed round's log line says of the failure beside its message."""
    return {
        "kind": error_kind(exc),
        "operation": getattr(exc, "operation", None),
        "resource": getattr(exc, "resource", None),
    }
