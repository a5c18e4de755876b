"""The event-loop stall monitor shows work that holds the loop, in /metrics and as the worst stall, and tells a
loop held by computing apart from a loop that was late without computing (its thread not running)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

from prometheus_client import CollectorRegistry

from shared.loop_monitor import LoopStallMonitor


def _spin(cpu_seconds: float) -> None:
    """Compute on the loop's thread for `cpu_seconds` of its CPU time, as a round computing in one piece would (CPU
    time, so a busy machine that deschedules the test makes the hold longer, never shorter)."""
    until = time.thread_time() + cpu_seconds
    while time.thread_time() < until:
        sum(range(1000))


async def _monitored(hold: Callable[[], None]) -> tuple[LoopStallMonitor, CollectorRegistry]:
    registry = CollectorRegistry()
    monitor = LoopStallMonitor(registry, interval_s=0.01)
    task = asyncio.create_task(monitor.run())
    await asyncio.sleep(0.05)
    hold()
    await asyncio.sleep(0.05)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return monitor, registry


async def test_computing_on_the_loop_is_measured_as_a_stall_and_as_held() -> None:
    monitor, registry = await _monitored(lambda: _spin(0.3))
    assert monitor.worst_s >= 0.25
    assert monitor.worst_held_s >= 0.25
    assert registry.get_sample_value("strait_event_loop_stall_max_seconds") == monitor.worst_s
    assert registry.get_sample_value("strait_event_loop_held_max_seconds") == monitor.worst_held_s
    assert (registry.get_sample_value("strait_event_loop_stall_seconds_bucket", {"le": "0.25"}) or 0) < (
        registry.get_sample_value("strait_event_loop_stall_seconds_count") or 0
    )
    assert (registry.get_sample_value("strait_event_loop_held_seconds_bucket", {"le": "0.1"}) or 0) < (
        registry.get_sample_value("strait_event_loop_held_seconds_count") or 0
    )


async def test_a_late_wake_without_computing_is_a_stall_but_not_held() -> None:
    # The thread sleeps: what a process waiting for a core looks like from inside (late, and no CPU time spent).
    monitor, registry = await _monitored(lambda: time.sleep(0.3))
    assert monitor.worst_s >= 0.25
    assert monitor.worst_held_s < 0.1
    assert registry.get_sample_value("strait_event_loop_held_seconds_bucket", {"le": "0.1"}) == (
        registry.get_sample_value("strait_event_loop_held_seconds_count")
    )
