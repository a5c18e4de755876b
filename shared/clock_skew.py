"""How far ahead of a reader's clock a heartbeat or status may be stamped and still be believed.

Readers of heartbeats keep the newest timestamp, and every reader ages a record as `now - ts` floored at 0. One
record stamped far in the future (a hostile writer, or an emitter whose clock jumped) was then the newest for good
and 0 s old, so a flow that stalled looked live for ever. Healthy hosts' clocks differ by far less than
MAX_AHEAD_MS; a timestamp further ahead of the reader's clock is not believed: a heartbeat is skipped (never taken
as the newest), and a status is taken as stale (it is its instance's only record on the compacted topic: skipped,
the instance would vanish from `strait status` and its stall with it). Readers count each such record (the
translator and heartbeat have Prometheus counters) and warn through `AheadLog`.

Checks that must see every instance that may still run (a failover waiting for data-mirror to stop, a migration
asking whether it runs) do not apply this: for them a status from the future still means "may be running".
"""

from __future__ import annotations

import time
from collections.abc import Callable

import structlog
from structlog.typing import FilteringBoundLogger

from shared.log_repeats import REPEAT_WINDOW_S, RepeatLimiter

MAX_AHEAD_MS = 5 * 60 * 1000


def too_far_ahead(ts_ms: int, now_ms: int) -> bool:
    """True when `ts_ms` is more than MAX_AHEAD_MS ahead of the reader's `now_ms` (epoch ms): not to be believed."""
    return ts_ms - now_ms > MAX_AHEAD_MS


class AheadLog:
    """Warns of records stamped too far ahead: the first of each kind and place, then at most one per window
    (with how many were left out), since a skewed emitter writes a heartbeat a second."""

    def __init__(
        self,
        log: FilteringBoundLogger | None = None,
        *,
        window_s: float = REPEAT_WINDOW_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._log = log if log is not None else structlog.get_logger(__name__)
        self._limiter = RepeatLimiter(window_s, clock)

    def warn(self, kind: str, ts_ms: int, now_ms: int, **where: str) -> None:
        """Note one `kind` record (heartbeat, status) stamped at `ts_ms`, read at `now_ms`; `where` names its flow or
        instance."""
        left_out = self._limiter.admit((kind, *sorted(where.items())))
        if left_out is None:
            return
        self._log.warning(
            "timestamp_ahead_of_clock",
            kind=kind,
            ahead_s=round((ts_ms - now_ms) / 1000, 3),
            max_ahead_s=MAX_AHEAD_MS / 1000,
            repeated=left_out,
            **where,
        )
