"""The LeaderJob of the audit for one flow: a round in a worker thread, then metrics and the standing finding."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from services.audit.metrics import AuditMetrics
from services.audit.watch import AuditLimits, FlowAudit
from shared.errors import KafkaOperationError, StraitError
from shared.flow_context import FlowContext


class AuditJob:
    """Audits one flow while this instance holds its lease; a loss found stays in the status until restart."""

    def __init__(self, context: FlowContext, limits: AuditLimits, metrics: AuditMetrics, interval_s: float) -> None:
        self.context = context
        self.flow = context.flow
        self._limits = limits
        self._metrics = metrics
        self._interval_s = interval_s
        self._audit: FlowAudit | None = None
        self._reported: dict[str, int] = {}

    def became_leader(self) -> None:
        """Start from the mirror's current positions: what another instance verified is its own to report."""
        if self._audit is not None:
            self._audit.close()
        self._audit = None
        self._reported = {}

    async def run_round(self) -> Sequence[StraitError]:
        """One round off the event loop; what was lost so far, or left unverified, is the round's failure."""
        try:
            audit = await asyncio.to_thread(self._round)
        except StraitError:
            raise
        except Exception as exc:  # a client's own error (a timeout, a broker gone): a failed round, tried again
            raise KafkaOperationError(f"audit round of {self.flow.name}: {exc}", operation="audit") from exc
        self._export(audit)
        return audit.totals.problems()

    def _round(self) -> FlowAudit:
        if self._audit is None:
            self._audit = FlowAudit(self.context, self._limits)
        self._audit.round()
        return self._audit

    def _export(self, audit: FlowAudit) -> None:
        totals, flow = audit.totals, self.flow.name
        metrics = self._metrics
        for name, counter, value in (
            ("verified", metrics.verified, totals.verified),
            ("missing", metrics.missing, totals.missing),
            ("altered", metrics.altered, totals.altered),
            ("duplicates", metrics.duplicates, totals.duplicates),
            ("unexpected", metrics.unexpected, totals.unexpected),
            ("bytes_read", metrics.bytes_read, totals.bytes_read),
            ("dropped", metrics.dropped, totals.dropped),
            ("returned", metrics.returned, totals.returned),
        ):
            counter.labels(flow).inc(value - self._reported.get(name, 0))
            self._reported[name] = value
        skipped = (
            ("sampled_out", totals.sampled_out),
            ("expired", totals.expired),
            ("unplaced", totals.unplaced),
            ("transform_failed", totals.transform_failed),
        )
        for reason, value in skipped:
            metrics.skipped.labels(flow, reason).inc(value - self._reported.get(reason, 0))
            self._reported[reason] = value
        metrics.lag.labels(flow).set(totals.lag_records)
        for (topic, partition), offset in audit.positions.items():
            metrics.position.labels(flow, topic, str(partition)).set(offset)

    def interval_s(self) -> float:
        """The configured seconds between rounds."""
        return self._interval_s

    def details(self) -> dict[str, Any]:
        """The running counts for the status record."""
        if self._audit is None:
            return {"audit": "not started"}
        return {"audit": self._audit.totals.details()}

    def close(self) -> None:
        """Leave the clusters."""
        if self._audit is not None:
            self._audit.close()
            self._audit = None
