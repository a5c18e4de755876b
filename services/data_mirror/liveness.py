"""data-mirror's liveness probe: the driver's loop comes round every fraction of a second (or waits, bounded, on a
look-up); a loop that has not come round for STUCK_AFTER_S is stuck on a call that will not return, and the
orchestrator should restart the process. Starting (Spark coming up) and stopping (tasks handing over) are alive."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

STUCK_AFTER_S = 120.0  # above every bounded wait of a round (client look-ups give up within 30 s)


class RoundClock:
    """When the driver's loop last came round."""

    def __init__(self, stuck_after_s: float = STUCK_AFTER_S, clock: Callable[[], float] = time.monotonic) -> None:
        self._stuck_after_s = stuck_after_s
        self._clock = clock
        self._last: float | None = None

    def round(self) -> None:
        """The loop came round."""
        self._last = self._clock()

    def liveness(self, *, running: bool) -> tuple[bool, dict[str, Any]]:
        """(alive, details) for /health; `running`: started and not stopping (only then is a quiet loop stuck)."""
        if not running or self._last is None:
            return True, {"service": "data-mirror"}
        since = self._clock() - self._last
        details: dict[str, Any] = {"service": "data-mirror", "since_last_round_s": round(since, 1)}
        if since > self._stuck_after_s:
            details["error"] = f"the driver's loop has not come round for {since:.0f}s"
            return False, details
        return True, details
