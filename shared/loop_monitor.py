"""How long the event loop was held: a timer that should wake every `interval_s` measures how late it woke.

A service's leases, heartbeats and HTTP answers all wait for the loop, so a round that computes for half a second
in one piece delays every one of them; this makes such stalls visible in /metrics instead of as lost leases.
"""

from __future__ import annotations

import asyncio
import time

from prometheus_client import CollectorRegistry, Gauge, Histogram

STALL_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class LoopStallMonitor:
    """Samples the loop's lateness every `interval_s`; `worst_s` is the longest stall seen so far."""

    def __init__(self, registry: CollectorRegistry, *, interval_s: float = 0.05) -> None:
        self._interval_s = interval_s
        self.worst_s = 0.0
        self._stalls = Histogram(
            "strait_event_loop_stall_seconds",
            "how much later than planned the event loop woke a timer (time it was held by other work)",
            buckets=STALL_BUCKETS_S,
            registry=registry,
        )
        self._worst = Gauge(
            "strait_event_loop_stall_max_seconds", "the longest event-loop stall since the start", registry=registry
        )

    async def run(self) -> None:
        """Sample until cancelled."""
        while True:
            planned = time.perf_counter() + self._interval_s
            await asyncio.sleep(self._interval_s)
            self.record(max(0.0, time.perf_counter() - planned))

    def record(self, stall_s: float) -> None:
        """Count one sample."""
        self._stalls.observe(stall_s)
        if stall_s > self.worst_s:
            self.worst_s = stall_s
            self._worst.set(stall_s)
