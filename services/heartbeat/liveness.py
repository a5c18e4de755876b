"""Liveness of one flow from its mirrored heartbeats: live, waiting for the first one, or stalled (pure).

A flow is stalled when the newest heartbeat seen is older than `stall_after_ms`, or when none arrived
within `stall_after_ms` of watching. Ages use the heartbeat's own timestamp (the emitter's clock), so a
backlog of old heartbeats read at start does not count as liveness; one stamped too far ahead of the reader's clock
(`shared/clock_skew.py`) is not believed, or it would be the newest, and the flow live, until that future came.
"""

from __future__ import annotations

from typing import Literal

from shared.clock_skew import too_far_ahead

LivenessState = Literal["live", "waiting", "stalled"]


class Liveness:
    """Tracks the newest heartbeat timestamp and the latency of the last one received."""

    def __init__(self, stall_after_ms: int, started_ms: int) -> None:
        self.stall_after_ms = stall_after_ms
        self.started_ms = started_ms
        self.newest_ms: int | None = None
        self.last_latency_ms: int | None = None
        self.received = 0
        self.ahead = 0  # heartbeats stamped too far ahead to be believed

    def observe(self, heartbeat_ms: int, now_ms: int) -> int | None:
        """Record a heartbeat read at `now_ms`; returns its end-to-end latency (now minus its timestamp), or None
        for one stamped too far ahead (counted in `ahead`, and never the newest)."""
        self.received += 1
        if too_far_ahead(heartbeat_ms, now_ms):
            self.ahead += 1
            return None
        if self.newest_ms is None or heartbeat_ms > self.newest_ms:
            self.newest_ms = heartbeat_ms
        self.last_latency_ms = max(0, now_ms - heartbeat_ms)
        return self.last_latency_ms

    def age_ms(self, now_ms: int) -> int | None:
        """Age of the newest heartbeat, or None before the first."""
        return None if self.newest_ms is None else max(0, now_ms - self.newest_ms)

    def state(self, now_ms: int) -> LivenessState:
        """live, waiting (nothing yet, still within the stall window) or stalled."""
        age = self.age_ms(now_ms)
        if age is None:
            return "stalled" if now_ms - self.started_ms > self.stall_after_ms else "waiting"
        return "stalled" if age > self.stall_after_ms else "live"
