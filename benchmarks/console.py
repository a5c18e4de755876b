"""Progress lines on stderr while the benchmark runs (the report is the real output)."""

from __future__ import annotations

import sys
import time

_STARTED = time.monotonic()


def say(message: str) -> None:
    """One line with the minutes:seconds since the benchmark started."""
    minutes, seconds = divmod(int(time.monotonic() - _STARTED), 60)
    print(f"[bench {minutes:02d}:{seconds:02d}] {message}", file=sys.stderr, flush=True)
