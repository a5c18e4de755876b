"""The demo's Strait services, each a process of its own started as an operator would start it.

Every service runs as `python -m services.<package> --config FILE --metrics-port N` in a session of its own,
so the terminal's Ctrl-C reaches only the demo, which then stops the services in order. The kernel sends
SIGTERM to a service if the demo itself dies, and `stop` clears the service's whole process group (Spark's
JVM and Python workers included), so nothing outlives the demo.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True, slots=True)
class ServiceSpec:
    """One Strait service: its name, its package under services/ and the flag that sets its HTTP port."""

    name: str
    package: str
    port_flag: str = "--metrics-port"


# Start order: topic-sync first (it creates the remote topics data-mirror writes to), data-mirror last
# (Spark takes longest to start, and by then its topics exist).
SERVICES: tuple[ServiceSpec, ...] = (
    ServiceSpec("topic-sync", "topic_sync"),
    ServiceSpec("acl-sync", "acl_sync"),
    ServiceSpec("heartbeat", "heartbeat"),
    ServiceSpec("audit", "audit"),
    ServiceSpec("checkpoint", "checkpoint"),
    ServiceSpec("offset-translator", "offset_translator", port_flag="--port"),
    ServiceSpec("data-mirror", "data_mirror"),
)


def _term_with_parent() -> None:
    """Runs in the child before exec: SIGTERM it (a clean stop) if the demo dies without stopping it."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class ServiceProcess:
    """One running service: its process, its HTTP port (/health, /ready, /metrics) and its log file."""

    def __init__(self, spec: ServiceSpec, config: Path, log_dir: Path, port: int) -> None:
        self.spec = spec
        self.port = port
        self.log_path = log_dir / f"{spec.name}.log"
        self.command = [
            sys.executable,
            "-m",
            f"services.{spec.package}",
            "--config",
            str(config),
            spec.port_flag,
            str(port),
            "--instance-id",
            f"demo-{spec.name}",
        ]
        self.started_at = 0.0
        self.ready_after_s: float | None = None
        self.stop_requested = False
        self._popen: subprocess.Popen[bytes] | None = None

    @property
    def name(self) -> str:
        """The service's name (topic-sync, data-mirror, ...)."""
        return self.spec.name

    @property
    def url(self) -> str:
        """Base URL of the service's HTTP endpoint."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        """The process id once started."""
        return self._popen.pid if self._popen is not None else None

    def start(self) -> None:
        """Start the process in its own session, its output going to its log file."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self._popen = subprocess.Popen(
                self.command,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=_term_with_parent,
            )
        self.started_at = time.monotonic()

    def exit_code(self) -> int | None:
        """The exit code once the process ended, else None."""
        return self._popen.poll() if self._popen is not None else None

    def exited_unexpectedly(self) -> bool:
        """True if the process ended without being asked to."""
        return not self.stop_requested and self.exit_code() is not None

    def probe(self, path: str) -> bool:
        """True if GET `path` (/health or /ready) answers 200 right now."""
        try:
            with urllib.request.urlopen(self.url + path, timeout=2) as response:
                return bool(response.status == 200)
        except (OSError, urllib.error.URLError):
            return False

    def request_stop(self) -> None:
        """SIGTERM: the service drains, commits, publishes a last status and exits."""
        self.stop_requested = True
        if self._popen is not None and self._popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self._popen.send_signal(signal.SIGTERM)

    def wait_stopped(self, timeout_s: float) -> int | None:
        """Wait for the exit; SIGKILL the process group if it takes longer than `timeout_s` (then None).

        Whatever is left of the group afterwards (a Spark worker, say) is killed too."""
        if self._popen is None:
            return 0
        try:
            code: int | None = self._popen.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            code = None
            self._kill_group()
            self._popen.wait(timeout=30)
        self._kill_group()
        return code

    def _kill_group(self) -> None:
        if self._popen is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._popen.pid, signal.SIGKILL)

    def log_tail(self, lines: int = 15) -> str:
        """The last lines of the service's log, for error messages."""
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


class ServiceFailedError(RuntimeError):
    """A service exited while the demo started it."""

    def __init__(self, service: ServiceProcess) -> None:
        super().__init__(
            f"{service.name} exited with code {service.exit_code()} while starting; "
            f"its log ({service.log_path}) ends with:\n{service.log_tail()}"
        )
        self.service = service


def wait_ready(
    services: Sequence[ServiceProcess],
    timeout_s: float,
    on_ready: Callable[[ServiceProcess], None],
) -> list[ServiceProcess]:
    """Poll /ready until every service answers 200; return the ones still not ready after `timeout_s`.

    Raises ServiceFailedError as soon as one exits."""
    deadline = time.monotonic() + timeout_s
    waiting = list(services)
    while waiting and time.monotonic() < deadline:
        for service in list(waiting):
            if service.exit_code() is not None:
                raise ServiceFailedError(service)
            if service.probe("/ready"):
                service.ready_after_s = time.monotonic() - service.started_at
                waiting.remove(service)
                on_ready(service)
        if waiting:
            time.sleep(0.5)
    return waiting


def stop_all(services: Sequence[ServiceProcess], timeout_s: float) -> dict[str, int | None]:
    """SIGTERM every service, then wait for each (bounded); service name -> exit code (None: had to be killed)."""
    for service in services:
        service.request_stop()
    return {service.name: service.wait_stopped(timeout_s) for service in services}
