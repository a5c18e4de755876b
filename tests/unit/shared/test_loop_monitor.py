"""The event-loop stall monitor shows work that holds the loop, in /metrics and as the worst stall, and tells a
loop held by computing apart from a loop that was late without computing (its thread not running)."""

from __future__ import annotations

import time
from collections.abc import Callable

from prometheus_client import CollectorRegistry

from shared.loop_monitor import LoopStallMonitor
from tests.support.loop_holding import hold_while_watched, spin_cpu


async def _monitored(hold: Callable[[], None]) -> tuple[LoopStallMonitor, CollectorRegistry]:
    registry = CollectorRegistry()
    monitor = LoopStallMonitor(registry, interval_s=0.01)
    await hold_while_watched(monitor.run(), hold)
    return monitor, registry


async def test_computing_on_the_loop_is_measured_as_a_stall_and_as_held() -> None:
    monitor, registry = await _monitored(lambda: spin_cpu(0.3))
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
