"""The loop watchdog names the code that holds the event loop, and says nothing when the loop is free or its thread
only waited (not computing)."""

from __future__ import annotations

import time
from collections.abc import Callable, MutableMapping
from typing import Any

from structlog.testing import capture_logs

from shared.loop_watchdog import LoopWatchdog
from tests.support.loop_holding import hold_while_watched, spin_cpu


async def _watched(hold: Callable[[], None]) -> tuple[LoopWatchdog, list[MutableMapping[str, Any]]]:
    watchdog = LoopWatchdog(limit_s=0.1, check_s=0.01)
    with capture_logs() as logs:
        await hold_while_watched(watchdog.run(), hold)
    return watchdog, [entry for entry in logs if entry["event"] == "event_loop_held"]


async def test_a_loop_held_by_computing_is_reported_once_with_the_code_holding_it() -> None:
    watchdog, held = await _watched(lambda: spin_cpu(0.4))
    assert watchdog.reports == 1
    [report] = held
    assert "spin_cpu" in report["stack"]  # the code that held the loop
    assert report["held_ms"] >= 100


async def test_a_free_loop_or_a_thread_that_only_waited_is_not_reported() -> None:
    free, nothing = await _watched(lambda: None)
    assert free.reports == 0
    assert nothing == []
    waited, still_nothing = await _watched(lambda: time.sleep(0.4))  # late, but not computing
    assert waited.reports == 0
    assert still_nothing == []
