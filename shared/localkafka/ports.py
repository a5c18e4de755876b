"""Free loopback ports for the local clusters and their helpers, never handed out twice at once.

The kernel may offer a port again as soon as the probing socket closes, to this process or another (test
workers start clusters side by side): a clean-clone run once got the same port for a broker's client and
controller listeners, and the broker refused to start. Each port given out is marked by a file naming the
process that got it, so no process is given it again while that process lives.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import socket
import tempfile
import threading
from pathlib import Path

TRIES = 100
MARKS = Path(tempfile.gettempdir()) / f"strait-ports-{os.getuid()}"  # per user: another's would not be writable
_lock = threading.Lock()
_mine: list[Path] = []


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now and no living process was given here."""
    with _lock:
        MARKS.mkdir(exist_ok=True)
        with (MARKS / ".lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one process at a time looks at and writes the marks
            for _ in range(TRIES):
                with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                    sock.bind(("127.0.0.1", 0))
                    port = int(sock.getsockname()[1])
                if _claim(MARKS / str(port)):
                    return port
    raise OSError(f"no loopback port free of other claims in {TRIES} offers from the kernel (marks: {MARKS})")


def _claim(mark: Path) -> bool:
    """Mark the port as this process's; False when a living process (this one too) holds it."""
    if _holder_alive(mark):
        return False
    mark.write_text(str(os.getpid()))
    if not _mine:
        atexit.register(_release_all)
    _mine.append(mark)
    return True


def _holder_alive(mark: Path) -> bool:
    try:
        pid = int(mark.read_text())
    except FileNotFoundError:
        return False
    except (OSError, ValueError):  # unreadable: treat as held, another port will do
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's living process
        return True
    return True


def _release_all() -> None:
    for mark in _mine:
        with contextlib.suppress(OSError):
            mark.unlink()
