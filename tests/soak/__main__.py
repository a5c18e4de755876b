"""`python -m tests.soak` (scripts/soak): exit 0 when nothing was lost and failover offsets are safe, else 1."""

from __future__ import annotations

import signal
import sys
from types import FrameType

from tests.soak.options import parse_args
from tests.soak.run import Soak, write_result

INTERRUPTED = 130


def _interrupt(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main() -> int:
    """Run one soak; SIGTERM and Ctrl-C stop it and everything it started."""
    options = parse_args()
    signal.signal(signal.SIGTERM, _interrupt)
    print(f"soak: {options.command()}", flush=True)
    soak = Soak(options)
    try:
        result = soak.run()
    except KeyboardInterrupt:
        print("soak: interrupted; stopping everything it started", flush=True)
        return INTERRUPTED
    finally:
        soak.cleanup()
    write_result(result, options.out)
    return 0 if result.passed else 1


if __name__ == "__main__":
    sys.exit(main())
