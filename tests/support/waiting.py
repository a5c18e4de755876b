"""Waiting for a condition in tests, always with a deadline."""

from __future__ import annotations

import time
from collections.abc import Callable

FIRST_INTERVAL_S = 0.1
MAX_INTERVAL_S = 0.5


def wait_until(
    predicate: Callable[[], bool], timeout_s: float, what: str, explain: Callable[[], str] | None = None
) -> None:
    """Poll `predicate` (after 0.1 s, then twice as long each time up to 0.5 s); fail naming `what` if it is still
    false after `timeout_s`, with what `explain` says about the state then.

    Predicates mostly ask a broker, often through a client made for the question: asked every 0.1 s, one took 0.17
    cores (0.14 of them the broker's), every 0.5 s 0.04, and the suite's waits run side by side."""
    deadline = time.monotonic() + timeout_s
    interval = FIRST_INTERVAL_S
    while not predicate():
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out waiting for {what}" + (f": {explain()}" if explain else ""))
        time.sleep(interval)
        interval = min(MAX_INTERVAL_S, interval * 2)
