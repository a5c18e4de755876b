"""Every Strait service of the flow as a real process: start, kill -9 and restart, notice crashes, stop."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import httpx

from shared.localkafka.ports import free_port
from tests.soak.events import EventLog
from tests.support.service_process import ServiceProcess

# Start order: topic-sync creates the remote topics, data-mirror (slowest: Spark) comes last.
PACKAGES = {
    "topic-sync": "topic_sync",
    "heartbeat": "heartbeat",
    "checkpoint": "checkpoint",
    "offset-translator": "offset_translator",
    "audit": "audit",
    "data-mirror": "data_mirror",
}
READY_TIMEOUT_S = 300


class Fleet:
    """The running instance of each service plus every instance started so far (for logs and counts)."""

    def __init__(self, config: Path, log_dir: Path, events: EventLog) -> None:
        self._config = config
        self._log_dir = log_dir
        self._events = events
        self.current: dict[str, ServiceProcess] = {}
        self.instances: dict[str, list[ServiceProcess]] = {name: [] for name in PACKAGES}
        self.kills: Counter[str] = Counter()
        self.exits: Counter[str] = Counter()
        self.translator_port = free_port()

    @property
    def translator_url(self) -> str:
        """Base URL of the offset translator."""
        return f"http://127.0.0.1:{self.translator_port}"

    def names(self) -> list[str]:
        """The services, in start order."""
        return list(PACKAGES)

    def start(self, name: str) -> ServiceProcess:
        """Start a new instance of `name` (the translator keeps its port across restarts)."""
        args = ("--port", str(self.translator_port)) if name == "offset-translator" else ()
        process = ServiceProcess(PACKAGES[name], self._config, self._log_dir, *args)
        process.start()
        self.current[name] = process
        self.instances[name].append(process)
        return process

    def wait_ready(self, name: str, timeout_s: float = READY_TIMEOUT_S) -> None:
        """Block until the instance serves: its start log line, or the translator answering HTTP."""
        process = self.current[name]
        if name == "data-mirror":
            process.wait_for_log("driver_ready", timeout_s=timeout_s)
        elif name == "offset-translator":
            _wait_http(f"{self.translator_url}/v1/flows", process, timeout_s)
        else:
            process.wait_for_log("service_started", timeout_s=timeout_s)

    def start_all(self, after_topic_sync: Callable[[], None]) -> None:
        """topic-sync first, then `after_topic_sync()` (wait for the remote topics), then the rest; all ready."""
        self.start("topic-sync")
        self.wait_ready("topic-sync")
        after_topic_sync()
        for name in self.names()[1:]:
            self.start(name)
        for name in self.names()[1:]:
            self.wait_ready(name)

    def kill_and_restart(self, name: str) -> None:
        """kill -9 (with Spark's JVM and workers) and start a new instance with the same config, as a supervisor."""
        self.current[name].kill()
        self.kills[name] += 1
        self.start(name)

    def supervise(self) -> None:
        """Restart (and record) every service that exited without being asked to."""
        for name, process in list(self.current.items()):
            code = process.popen.poll() if process.popen is not None else None
            if code is not None:
                self.exits[name] += 1
                self._events.record("service-exit", f"{name} exited with code {code} (log {process.log_path.name})")
                self.start(name)

    def stop_all(self, timeout_s: float = 90) -> dict[str, int | None]:
        """SIGTERM every current instance (data-mirror first); name -> exit code, None if it had to be killed."""
        codes: dict[str, int | None] = {}
        for name in reversed(self.names()):
            process = self.current.get(name)
            if process is None:
                continue
            try:
                codes[name] = process.stop(timeout_s=timeout_s)
            except AssertionError:
                codes[name] = None
        return codes

    def kill_all(self) -> None:
        """kill -9 whatever still runs (after an interrupt or a failed stop)."""
        for processes in self.instances.values():
            for process in processes:
                process.kill()

    def error_lines(self) -> Counter[str]:
        """Log lines at level error, per service, over all its instances."""
        counts: Counter[str] = Counter()
        for name, processes in self.instances.items():
            for process in processes:
                counts[name] += sum(1 for entry in process.logs() if entry.get("level") == "error")
        return counts


def _wait_http(url: str, process: ServiceProcess, timeout_s: float) -> None:
    """Poll `url` until it answers 200; fail with the log tail if the process exits or time runs out."""
    deadline = time.monotonic() + timeout_s
    with httpx.Client(timeout=5) as client:
        while time.monotonic() < deadline:
            if process.popen is not None and process.popen.poll() is not None:
                break
            try:
                if client.get(url).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(1)
    raise AssertionError(f"{process.package} not serving {url}; tail:\n{process.tail()}")
