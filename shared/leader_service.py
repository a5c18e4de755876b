"""The Service of a leader-run job (topic-sync, acl-sync): one LeaderLoop per served flow, and flow selection."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from shared.config import FlowConfig
from shared.control import ControlPublisher
from shared.flow_context import FlowContext
from shared.leader_loop import LeaderJob, LeaderLoop, LeaderMetrics
from shared.service import Service


class LeaderLoopService(Service):
    """Runs each LeaderLoop as a child unit: a crash in one stops the service, stop drains and closes them all."""

    def __init__(self, loops: Sequence[LeaderLoop], *, name: str) -> None:
        self.name = name
        super().__init__()
        self.loops = list(loops)

    async def on_start(self) -> None:
        """Start every flow; each opens its lease and control publisher in the background."""
        for loop in self.loops:
            await self.start_child(loop)
        if not self.loops:
            self.log.warning("nothing_to_do", reason="no flow needs this service")

    def readiness(self) -> tuple[bool, dict[str, Any]]:
        """Ready once every flow's lease and publisher are up."""
        ready, details = super().readiness()
        opened = all(loop.opened for loop in self.loops)
        leading = sorted(loop.flow.name for loop in self.loops if loop.is_leader)
        return ready and opened, {**details, "flows_opened": opened, "leading": leading}


def leader_flow_loop(
    service: str,
    context: FlowContext,
    *,
    instance_id: str,
    status_interval_s: float,
    metrics: LeaderMetrics,
    make_job: Callable[[ControlPublisher, float], LeaderJob],
) -> LeaderLoop:
    """The lease, control publisher and job of one flow; `make_job(publisher, admin_timeout_s)` builds the job."""
    publisher = context.publisher()
    return LeaderLoop(
        service=service,
        context=context,
        job=make_job(publisher, context.flow.settings.admin_timeout_ms / 1000),
        publisher=publisher,
        metrics=metrics,
        instance_id=instance_id,
        status_interval_s=status_interval_s,
    )


class LeaderSettings(Protocol):
    """What every leader-run service's settings carry."""

    @property
    def instance_id(self) -> str: ...

    @property
    def status_interval_s(self) -> float: ...


def leader_service(
    service: str,
    settings: LeaderSettings,
    flows: Iterable[FlowConfig],
    metrics: LeaderMetrics,
    make_job: Callable[[FlowContext, ControlPublisher, float], LeaderJob],
) -> LeaderLoopService:
    """The whole service: a LeaderLoop per flow, each running the job `make_job(context, publisher, timeout_s)`."""
    contexts = [FlowContext.of(flow) for flow in flows]
    loops = [
        leader_flow_loop(
            service,
            context,
            instance_id=settings.instance_id,
            status_interval_s=settings.status_interval_s,
            metrics=metrics,
            make_job=functools.partial(make_job, context),
        )
        for context in contexts
    ]
    return LeaderLoopService(loops, name=service)
