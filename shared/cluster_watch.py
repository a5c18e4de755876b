"""Is each cluster a service needs answering right now? A cheap periodic probe whose verdict the status reports.

The probe itself (a short metadata request, and which failures count as silence) is `shared.kafka.probe`;
this module keeps, per cluster, whether it answered and since when it has not. Probes are blocking: run
`probe` in a thread (`probe_async` does).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping

import structlog

from shared.config import FlowConfig
from shared.kafka.probe import ClusterProbe

PROBE_TIMEOUT_S = 8.0
_log = structlog.get_logger(__name__)


class ClusterWatch:
    """Probes the clusters `alias -> admin props` and remembers which of them did not answer, and since when."""

    def __init__(self, clusters: Mapping[str, Mapping[str, str]], *, timeout_s: float = PROBE_TIMEOUT_S) -> None:
        self._probes = {alias: ClusterProbe(props, timeout_s=timeout_s) for alias, props in clusters.items()}
        self._down: dict[str, tuple[str, float]] = {}  # alias -> (why, since epoch s)

    @classmethod
    def for_flows(cls, flows: Iterable[FlowConfig], *, timeout_s: float = PROBE_TIMEOUT_S) -> ClusterWatch:
        """A watch over the source and target of every flow (FlowConfig), each cluster once."""
        clusters: dict[str, Mapping[str, str]] = {}
        for flow in flows:
            clusters.setdefault(flow.source, flow.source_admin_props())
            clusters.setdefault(flow.target, flow.target_admin_props())
        return cls(clusters, timeout_s=timeout_s)

    @property
    def aliases(self) -> list[str]:
        """The watched clusters."""
        return list(self._probes)

    def probe(self) -> None:
        """Ask every watched cluster, one after the other, each within the probe's deadline."""
        for alias, probe in self._probes.items():
            self._verdict(alias, probe.ask())

    async def probe_async(self) -> None:
        """`probe` in a worker thread."""
        await asyncio.to_thread(self.probe)

    def _verdict(self, alias: str, reason: str | None) -> None:
        was = self._down.get(alias)
        if reason is None:
            if was is not None:
                del self._down[alias]
                _log.info("cluster_reachable_again", cluster=alias, down_s=round(time.time() - was[1], 1))
            return
        message = f"cluster {alias} unreachable: {reason}"
        if was is None:
            _log.warning("cluster_unreachable", cluster=alias, error=message)
        self._down[alias] = (message, was[1] if was else time.time())

    def errors(self, aliases: Iterable[str] | None = None) -> list[str]:
        """Why each unreachable cluster of `aliases` (default: all) is unreachable: `cluster A unreachable: ...`."""
        wanted = self.aliases if aliases is None else list(aliases)
        found = [self._down.get(alias) for alias in wanted]  # probes run in another thread: no check-then-get
        return [entry[0] for entry in found if entry is not None]

    def unreachable(self) -> dict[str, float]:
        """alias -> since when (epoch seconds) it has not answered."""
        return {alias: since for alias, (_, since) in dict(self._down).items()}
