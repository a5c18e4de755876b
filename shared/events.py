"""Waiting on several asyncio events at once (a stop, a lease change, new commits), bounded in time."""

from __future__ import annotations

import asyncio
import contextlib


async def wait_any(events: tuple[asyncio.Event, ...], timeout_s: float) -> None:
    """Until one of `events` is set or `timeout_s` passed; leaves no waiter behind."""
    waiters = [asyncio.ensure_future(event.wait()) for event in events]
    try:
        await asyncio.wait(waiters, timeout=max(0.0, timeout_s), return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
        for waiter in waiters:
            with contextlib.suppress(asyncio.CancelledError):
                await waiter
