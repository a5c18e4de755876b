"""The last hour of each flow's recovery point and replication latency, sampled from the index into a ring.

In memory and per translator replica (a restart starts an empty chart): the cockpit's chart is for the next five
minutes; Grafana, over the services' own metrics, keeps the long history.
"""

from __future__ import annotations

import math
from collections import deque

from services.offset_translator.cockpit_models import FlowHistory, HistorySample
from services.offset_translator.index import TranslatorIndex
from services.offset_translator.overview import cockpit_flow

KEPT_S = 3600.0


class HistoryRing:
    """flow name -> its samples, oldest first, at most KEPT_S seconds' worth at `interval_s`."""

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self._size = max(1, math.ceil(KEPT_S / interval_s))
        self._samples: dict[str, deque[HistorySample]] = {}

    def sample(self, index: TranslatorIndex, now_ms: int, *, stale_after_s: float) -> None:
        """Take one sample of every served flow (the service calls this every `interval_s`)."""
        for source, target in index.flows:
            flow = cockpit_flow(index, source, target, now_ms, stale_after_s=stale_after_s, stale=None)
            ring = self._samples.setdefault(flow.flow, deque(maxlen=self._size))
            ring.append(
                HistorySample(
                    ts_ms=now_ms,
                    rpo_records=flow.rpo_records,
                    rpo_seconds=flow.rpo_seconds,
                    heartbeat_age_s=flow.heartbeat_age_s,
                    latency_ms=flow.latency_ms,
                )
            )

    def history(self, flow: str, since_ms: int = 0) -> FlowHistory:
        """The flow's samples taken after `since_ms`, oldest first."""
        samples = [s for s in self._samples.get(flow, ()) if s.ts_ms > since_ms]
        return FlowHistory(flow=flow, interval_s=self.interval_s, samples=samples)
