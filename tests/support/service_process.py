"""Run a Strait service as a real subprocess, as an operator would, and stop it with a signal."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


class ServiceProcess:
    """`python -m services.<package> --config FILE ...` with its JSON log in a file."""

    def __init__(self, package: str, config: Path, log_dir: Path, *args: str, env: dict[str, str] | None = None):
        self.package = package
        self.config = config
        self.command = [
            sys.executable,
            "-m",
            f"services.{package}",
            "--config",
            str(config),
            "--metrics-port",
            "0",
            *args,
        ]
        self.log_path = log_dir / f"{package}-{int(time.time() * 1000)}.log"
        self.env = {**os.environ, **(env or {})}
        self.popen: subprocess.Popen[bytes] | None = None

    def start(self) -> ServiceProcess:
        """Start in the background."""
        with open(self.log_path, "ab") as log:
            self.popen = subprocess.Popen(
                self.command, stdout=log, stderr=subprocess.STDOUT, env=self.env, start_new_session=True
            )
        return self

    def logs(self) -> list[dict[str, Any]]:
        """Every JSON log line so far (other lines are ignored)."""
        entries = []
        for line in self.log_path.read_text(errors="replace").splitlines():
            if line.startswith("{"):
                try:
                    entries.append(json.loads(line))
                except json.JSONDecodeError:
                    continue
        return entries

    def wait_for_log(self, event: str, timeout_s: float = 120, **fields: object) -> dict[str, Any]:
        """Block until a log line with `event` (and `fields`) appears; fail with the log tail if not."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for entry in self.logs():
                if entry.get("event") == event and all(entry.get(k) == v for k, v in fields.items()):
                    return entry
            if self.popen is not None and self.popen.poll() is not None:
                break
            time.sleep(0.3)
        raise AssertionError(f"{self.package}: no '{event}' log line; tail:\n{self.tail()}")

    def tail(self, chars: int = 4000) -> str:
        """The end of the log file."""
        return self.log_path.read_text(errors="replace")[-chars:]

    def stop(self, timeout_s: float = 60) -> int:
        """SIGTERM and wait; returns the exit code."""
        assert self.popen is not None
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
        try:
            return self.popen.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"{self.package} did not stop within {timeout_s}s; tail:\n{self.tail()}") from None

    def kill(self) -> None:
        """SIGKILL the service and every descendant (Spark's JVM and its Python workers), as a crash would."""
        if self.popen is not None and self.popen.poll() is None:
            victims = [self.popen.pid, *_descendants(self.popen.pid)]
            for pid in victims:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            self.popen.wait(timeout=30)

    def freeze(self) -> None:
        """SIGSTOP the service and every descendant: it sees nothing of what happens until `thaw`."""
        assert self.popen is not None
        for pid in [self.popen.pid, *_descendants(self.popen.pid)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)

    def thaw(self) -> None:
        """SIGCONT what `freeze` stopped (descendants first, so the service finds its workers running)."""
        assert self.popen is not None
        for pid in [*reversed(_descendants(self.popen.pid)), self.popen.pid]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

    def __enter__(self) -> ServiceProcess:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        if exc_type is not None and self.log_path.exists():  # a failed test shows what the service said
            print(f"--- {self.package} log tail ({self.log_path}):\n{self.tail()}", file=sys.stderr)
        if self.popen is not None and self.popen.poll() is None:
            try:
                self.stop()
            except AssertionError:
                if exc_type is None:
                    raise
                print(f"--- {self.package} did not stop either; killed", file=sys.stderr)  # the failure shows
            finally:
                self.kill()


def _descendants(root: int) -> list[int]:
    """Every process below `root` (PySpark's worker daemon leaves its parent's process group)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                parent = int(stat.read().rsplit(") ", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry))
    found: list[int] = []
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found
