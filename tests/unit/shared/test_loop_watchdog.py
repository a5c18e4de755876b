"""The loop watchdog names the code that holds the event loop, and says nothing when the loop is free or its thread
only waited (not computing)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, MutableMapping
from typing import Any

from structlog.testing import capture_logs

from shared.loop_watchdog import LoopWatchdog


def _translate_ten_thousand_groups(cpu_seconds: float) -> None:
    until = time.thread_time() + cpu_seconds
    while time.thread_time() < until:
        sum(range(1000))


async def _watched(hold: Callable[[], None]) -> tuple[LoopWatchdog, list[MutableMapping[str, Any]]]:
    watchdog = LoopWatchdog(limit_s=0.1, check_s=0.01)
    with capture_logs() as logs:
        task = asyncio.create_task(watchdog.run())
        await asyncio.sleep(0.05)
        hold()
        await asyncio.sleep(0.05)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    return watchdog, [entry for entry in logs if entry["event"] == "event_loop_held"]


async def test_a_loop_held_by_computing_is_reported_once_with_the_code_holding_it() -> None:
    watchdog, held = await _watched(lambda: _translate_ten_thousand_groups(0.4))
    assert watchdog.reports == 1
    [report] = held
    assert "_translate_ten_thousand_groups" in report["stack"]
    assert report["held_ms"] >= 100


async def test_a_free_loop_or_a_thread_that_only_waited_is_not_reported() -> None:
    free, nothing = await _watched(lambda: None)
    assert free.reports == 0
    assert nothing == []
    waited, still_nothing = await _watched(lambda: time.sleep(0.4))  # late, but not computing
    assert waited.reports == 0
    assert still_nothing == []
