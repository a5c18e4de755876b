"""JVM child processes that never outlive the Python process that started them."""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import signal
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from shared.localkafka.class_archive import sharing_options
from shared.localkafka.jars import java_binary, kafka_classpath

_PR_SET_PDEATHSIG = 1
_LOG4J_CONFIG = Path(__file__).with_name("log4j2.yaml")
_live: set[JvmProcess] = set()
_live_lock = threading.Lock()


def die_with_parent() -> None:
    """Runs in the child before exec: the kernel kills it if the parent dies (even by kill -9)."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class JvmProcess:
    """One Java main class (by default from the pinned Kafka classpath), logging into its own file."""

    def __init__(
        self,
        main_class: str,
        args: Sequence[str],
        *,
        log_path: Path,
        heap_mb: int = 256,
        jvm_options: Sequence[str] = (),
        classpath: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.main_class = main_class
        self.args = list(args)
        self.log_path = log_path
        self.heap_mb = heap_mb
        self.jvm_options = list(jvm_options)
        self.classpath = classpath
        self.env = dict(env) if env is not None else None
        self._popen: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        """The JVM's pid while it runs."""
        return self._popen.pid if self._popen else None

    def command(self) -> list[str]:
        """The full java command line (a broker's starts from the class-data archive when there is one)."""
        classpath = self.classpath or kafka_classpath(quiet=True)
        sharing = sharing_options(self.main_class, classpath) if self.classpath is None else []
        return [
            java_binary(),
            f"-Xmx{self.heap_mb}m",
            f"-Xms{min(64, self.heap_mb)}m",
            "-XX:+UseSerialGC",
            "-XX:-UsePerfData",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={_LOG4J_CONFIG}",
            *sharing,
            *self.jvm_options,
            "-cp",
            classpath,
            self.main_class,
            *self.args,
        ]

    def start(self) -> None:
        """Start the JVM in the background."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self._popen = subprocess.Popen(
                self.command(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **self.env} if self.env is not None else None,
                preexec_fn=die_with_parent,
            )
        with _live_lock:
            _live.add(self)

    def run_to_completion(self, timeout_s: float = 120) -> int:
        """Run the JVM in the foreground (for one-shot tools) and return its exit code."""
        self.start()
        assert self._popen is not None
        try:
            return self._popen.wait(timeout=timeout_s)
        finally:
            self.stop(timeout_s=5)

    def is_running(self) -> bool:
        """True while the process has not exited."""
        return self._popen is not None and self._popen.poll() is None

    def send_signal(self, signum: int) -> None:
        """Deliver a signal (SIGSTOP/SIGCONT for outage tests, SIGKILL for crash tests)."""
        if self._popen is not None and self._popen.poll() is None:
            self._popen.send_signal(signum)

    def stop(self, timeout_s: float = 15) -> None:
        """SIGTERM, wait, then SIGKILL; safe to call twice."""
        popen = self._popen
        if popen is None:
            return
        if popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                popen.send_signal(signal.SIGCONT)
                popen.terminate()
            try:
                popen.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                popen.kill()
                popen.wait(timeout=10)
        with _live_lock:
            _live.discard(self)

    def kill(self) -> None:
        """SIGKILL now, as a crash would."""
        popen = self._popen
        if popen is not None and popen.poll() is None:
            popen.kill()
            popen.wait(timeout=10)
        with _live_lock:
            _live.discard(self)

    def log_tail(self, limit: int = 4000) -> str:
        """The end of the process's log, for error messages."""
        try:
            return self.log_path.read_text(errors="replace")[-limit:]
        except OSError:
            return ""


def stop_all_jvms() -> None:
    """Stop every JVM this process started and has not stopped yet."""
    with _live_lock:
        processes = list(_live)
    for process in processes:
        process.kill() if os.environ.get("STRAIT_FAST_EXIT") else process.stop(timeout_s=5)


atexit.register(stop_all_jvms)
