"""How long the garbage collector paused the process, per generation, in /metrics.

A collection runs inside whatever allocation triggered it, on the event loop's thread, so a full collection over a
large heap is an event-loop stall that no profile of the service's own code explains. Timing each collection
(gc.callbacks) tells the two apart: `strait_event_loop_stall_seconds` beside `strait_gc_pause_seconds`.
"""

from __future__ import annotations

import gc
import time
from typing import Any

from prometheus_client import CollectorRegistry, Gauge, Histogram

PAUSE_BUCKETS_S = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
GENERATIONS = (0, 1, 2)


class GcPauseMonitor:
    """Times every collection while installed; `worst_s` is the longest pause seen (any generation)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.worst_s = 0.0
        self._started: float | None = None
        self._pauses = Histogram(
            "strait_gc_pause_seconds",
            "how long one garbage collection paused the process, by generation (2: a full collection)",
            ["generation"],
            buckets=PAUSE_BUCKETS_S,
            registry=registry,
        )
        self._worst = Gauge(
            "strait_gc_pause_max_seconds", "the longest garbage-collection pause since the start", registry=registry
        )
        self._by_generation = {generation: self._pauses.labels(str(generation)) for generation in GENERATIONS}

    def install(self) -> GcPauseMonitor:
        """Start timing collections (idempotent)."""
        if self._callback not in gc.callbacks:
            gc.callbacks.append(self._callback)
        return self

    def uninstall(self) -> None:
        """Stop timing collections."""
        if self._callback in gc.callbacks:
            gc.callbacks.remove(self._callback)

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        if self._started is None:
            return
        pause_s = time.perf_counter() - self._started
        self._started = None
        generation = info.get("generation", 2)
        self._by_generation.get(generation, self._by_generation[2]).observe(pause_s)
        if pause_s > self.worst_s:
            self.worst_s = pause_s
            self._worst.set(pause_s)
