"""Identical log lines repeated many times a second (client libraries during an outage) are written once per window.

With a cluster gone, librdkafka logs a failed connect about every 50 ms per client and aiokafka one every
100 ms: thousands of identical lines a minute that bury the service's own events. The first line of a kind
is always written; repeats within `window_s` are counted and not written; the first one after the window
is written with `repeated`, how many were left out.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Hashable

REPEAT_WINDOW_S = 30.0
_MAX_KINDS = 10_000  # distinct lines remembered; beyond that the oldest are forgotten


class RepeatLimiter:
    """Decides per kind of line (any hashable key) whether to write it now and how many repeats it stands for."""

    def __init__(self, window_s: float = REPEAT_WINDOW_S, clock: Callable[[], float] = time.monotonic) -> None:
        self._window_s = window_s
        self._clock = clock
        self._seen: dict[Hashable, tuple[float, int]] = {}  # key -> (when last written, repeats left out since)

    def admit(self, key: Hashable) -> int | None:
        """None: leave this line out. Otherwise write it; the number is how many repeats were left out before."""
        now = self._clock()
        seen = self._seen.get(key)
        if seen is not None and now - seen[0] < self._window_s:
            self._seen[key] = (seen[0], seen[1] + 1)
            return None
        if seen is None and len(self._seen) >= _MAX_KINDS:
            del self._seen[next(iter(self._seen))]
        self._seen.pop(key, None)
        self._seen[key] = (now, 0)
        return seen[1] if seen is not None else 0


class RepeatFilter(logging.Filter):
    """A handler filter applying a RepeatLimiter to (logger, level, message) of the loggers named by `prefixes`
    (others pass untouched); adds `repeated` when it left some out."""

    def __init__(self, prefixes: tuple[str, ...], limiter: RepeatLimiter | None = None) -> None:
        super().__init__()
        self._prefixes = prefixes
        self._limiter = limiter or RepeatLimiter()

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith(self._prefixes):
            return True
        left_out = self._limiter.admit((record.name, record.levelno, record.getMessage()))
        if left_out is None:
            return False
        if left_out:
            record.repeated = left_out
        return True
