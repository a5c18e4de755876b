"""The garbage collector's thresholds for a long-running service that reads thousands of records a second.

With CPython's default (a young collection every 700 allocations), records still being handled in a batch are
promoted to the oldest generation, which then fills quickly and is scanned in full: in checkpoint at 10,000
commits a second that was a 150-400 ms pause of the event loop every second, collecting nothing. A young
generation of 100,000 lets those records die young; the tables a service keeps are scanned rarely.
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 100_000
MIDDLE_THRESHOLD = 10
OLD_THRESHOLD = 10


def tune_garbage_collector() -> None:
    """Set the thresholds above (memory held by cyclic garbage between collections stays a few MiB)."""
    gc.set_threshold(YOUNG_THRESHOLD, MIDDLE_THRESHOLD, OLD_THRESHOLD)
