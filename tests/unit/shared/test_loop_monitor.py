"""The event-loop stall monitor shows work that holds the loop, in /metrics and as the worst stall."""

from __future__ import annotations

import asyncio
import contextlib
import time

from prometheus_client import CollectorRegistry

from shared.loop_monitor import LoopStallMonitor


async def test_a_blocking_call_on_the_loop_is_measured_as_a_stall() -> None:
    registry = CollectorRegistry()
    monitor = LoopStallMonitor(registry, interval_s=0.01)
    task = asyncio.create_task(monitor.run())
    await asyncio.sleep(0.05)
    time.sleep(0.3)  # noqa: ASYNC251 -- holds the loop on purpose, as a round computing in one piece would
    await asyncio.sleep(0.05)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert monitor.worst_s >= 0.25
    assert registry.get_sample_value("strait_event_loop_stall_max_seconds") == monitor.worst_s
    assert (registry.get_sample_value("strait_event_loop_stall_seconds_bucket", {"le": "0.25"}) or 0) < (
        registry.get_sample_value("strait_event_loop_stall_seconds_count") or 0
    )
