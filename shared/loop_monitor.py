"""How long the event loop was held: a timer that should wake every `interval_s` measures how late it woke.

A service's leases, heartbeats and HTTP answers all wait for the loop, so a round that computes for half a second
in one piece delays every one of them; this makes such stalls visible in /metrics instead of as lost leases.

A timer also wakes late when the process is not scheduled at all (more runnable processes than cores), which no
change to the service can fix. So each late wake is also measured in the loop thread's own CPU time: the part of
the delay that thread spent computing (`held`) is the service's doing; the rest was waiting for a core (or for the
GIL held by another thread).
"""

from __future__ import annotations

import asyncio
import time

from prometheus_client import CollectorRegistry, Gauge, Histogram

STALL_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class LoopStallMonitor:
    """Samples the loop's lateness every `interval_s`; `worst_s` is the longest stall seen so far, `worst_held_s`
    the longest part of one that the loop's thread spent computing."""

    def __init__(self, registry: CollectorRegistry, *, interval_s: float = 0.05) -> None:
        self._interval_s = interval_s
        self.worst_s = 0.0
        self.worst_held_s = 0.0
        self._stalls = Histogram(
            "strait_event_loop_stall_seconds",
            "how much later than planned the event loop woke a timer (held by other work, or not scheduled)",
            buckets=STALL_BUCKETS_S,
            registry=registry,
        )
        self._held = Histogram(
            "strait_event_loop_held_seconds",
            "the part of each late wake that the event loop's thread spent computing (work holding the loop)",
            buckets=STALL_BUCKETS_S,
            registry=registry,
        )
        self._worst = Gauge(
            "strait_event_loop_stall_max_seconds", "the longest event-loop stall since the start", registry=registry
        )
        self._worst_held = Gauge(
            "strait_event_loop_held_max_seconds",
            "the longest time work held the event loop since the start (loop thread CPU time)",
            registry=registry,
        )

    async def run(self) -> None:
        """Sample until cancelled."""
        while True:
            planned = time.perf_counter() + self._interval_s
            cpu_before = time.thread_time()
            await asyncio.sleep(self._interval_s)
            stall_s = max(0.0, time.perf_counter() - planned)
            self.record(stall_s, held_s=min(stall_s, time.thread_time() - cpu_before))

    def record(self, stall_s: float, *, held_s: float | None = None) -> None:
        """Count one sample: `stall_s` late, `held_s` of it computing on the loop's thread (default: all of it)."""
        held_s = stall_s if held_s is None else held_s
        self._stalls.observe(stall_s)
        self._held.observe(held_s)
        if stall_s > self.worst_s:
            self.worst_s = stall_s
            self._worst.set(stall_s)
        if held_s > self.worst_held_s:
            self.worst_held_s = held_s
            self._worst_held.set(held_s)
