"""Strait's services as real processes for a benchmark run: started together, watched, stopped together."""

from __future__ import annotations

from pathlib import Path
from types import TracebackType

from tests.support.service_process import ServiceProcess


class StraitProcesses:
    """topic-sync, data-mirror (`tasks` Spark tasks) and checkpoint on `config`, plus any process `add`ed."""

    def __init__(self, config: Path, logs: Path, tasks: int) -> None:
        logs.mkdir(parents=True, exist_ok=True)
        self.processes = [
            ServiceProcess("topic_sync", config, logs),
            ServiceProcess("data_mirror", config, logs, env={"STRAIT_TASKS": str(tasks)}),
            ServiceProcess("checkpoint", config, logs),
        ]

    def add(self, process: ServiceProcess) -> None:
        """Watch and stop `process` too (started by the caller)."""
        self.processes.append(process)

    def alive(self) -> str | None:
        """None while every process runs, else which one exited and its log tail."""
        for process in self.processes:
            if process.popen is not None and process.popen.poll() is not None:
                return f"{process.package} exited ({process.popen.returncode}): {process.tail()}"
        return None

    def __enter__(self) -> StraitProcesses:
        for process in self.processes:
            process.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        for process in self.processes:
            try:
                process.stop(timeout_s=60)
            except AssertionError:  # did not stop in time: killed (stop says so)
                process.kill()
