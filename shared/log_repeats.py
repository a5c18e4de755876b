"""During an outage a client library's lines are written once per cause, then at most once per window.

With a cluster gone, librdkafka logs a failed connect about every 50 ms per client and aiokafka one every
100 ms, from every process (the service, and each Spark worker of data-mirror): thousands of lines a minute
that bury the service's own events. The lines differ only in what varies (a node id, an address or port, an
errno, a client's number, librdkafka's "after 3ms"), so they are counted by cause: the message with every
number, address and id replaced (`cause_of`). The first line of a cause is always written; repeats within
`window_s` are counted and left out; the first one after the window is written with `repeated`, how many were
left out since the last one written.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Hashable
from typing import Any

REPEAT_WINDOW_S = 60.0
_MAX_KINDS = 10_000  # distinct causes remembered; beyond that the oldest are forgotten

# What varies between lines of one cause: IPv6 addresses, hex ids (trace ids, UUID parts), then numbers
# (node ids, ports, errnos, counts, durations; an IPv4 address or a version is one number with dots).
_VARIABLE = re.compile(
    r"(?<![\w:])(?:[0-9a-fA-F]{0,4}:){2,7}[0-9a-fA-F]{0,4}(?![\w:])"
    r"|\b(?=[0-9a-fA-F]*\d)[0-9a-fA-F]{8,}\b"
    r"|\d+(?:\.\d+)*"
)
_SUPPRESSED = re.compile(r", \d+ identical error\(s\) suppressed")  # librdkafka's own count of the cause's repeats


def cause_of(message: str) -> str:
    """`message` with its variable parts (numbers, addresses, ids) replaced by `N`: what one cause's lines share."""
    return _VARIABLE.sub("N", _SUPPRESSED.sub("", message))


class RepeatLimiter:
    """Decides per kind of line (any hashable key) whether to write it now and how many repeats it stands for."""

    def __init__(self, window_s: float = REPEAT_WINDOW_S, clock: Callable[[], float] = time.monotonic) -> None:
        self._window_s = window_s
        self._clock = clock
        self._seen: dict[Hashable, tuple[float, int]] = {}  # key -> (when last written, repeats left out since)
        self._lock = threading.Lock()  # the relay's thread and the service's threads log at once

    def admit(self, key: Hashable) -> int | None:
        """None: leave this line out. Otherwise write it; the number is how many repeats were left out before."""
        with self._lock:
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


def _message(record: logging.LogRecord) -> str:
    """The record's text: a structlog event (the relay's lines) carries a dict, whose `event` is the message."""
    if isinstance(record.msg, dict):
        return str(record.msg.get("event", ""))
    return record.getMessage()


class RepeatFilter(logging.Filter):
    """A handler filter applying a RepeatLimiter to (logger, level, cause) of the loggers named by `prefixes`
    (others, Strait's own events, pass untouched); adds `repeated` when it left some out."""

    def __init__(self, prefixes: tuple[str, ...], limiter: RepeatLimiter | None = None) -> None:
        super().__init__()
        self._prefixes = prefixes
        self._limiter = limiter or RepeatLimiter()

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith(self._prefixes):
            return True
        left_out = self._limiter.admit((record.name, record.levelno, cause_of(_message(record))))
        if left_out is None:
            return False
        if left_out:
            event: Any = record.msg
            if isinstance(event, dict):
                event["repeated"] = left_out
            else:
                record.repeated = left_out
        return True
