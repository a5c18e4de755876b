"""Hold an event loop on purpose, for the tests of what watches it (stall monitor, watchdog)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Coroutine
from typing import Any


def spin_cpu(cpu_seconds: float) -> None:
    """Compute on this thread for `cpu_seconds` of its CPU time, as a round computing in one piece would (CPU time,
    so a busy machine that deschedules the test makes the hold longer, never shorter)."""
    until = time.thread_time() + cpu_seconds
    while time.thread_time() < until:
        sum(range(1000))


async def hold_while_watched(watch: Coroutine[Any, Any, None], hold: Callable[[], None]) -> None:
    """Run `watch` as a task, `hold` the loop once it has started, let it see the loop free again, then stop it."""
    task = asyncio.create_task(watch)
    await asyncio.sleep(0.05)
    hold()
    await asyncio.sleep(0.05)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
