"""One running copy task as the driver sees it: a Spark job of one task, started and waited for from a thread.

A job per slot (not one job for all) lets one slot be handed over or restarted while the others keep copying.
"""

from __future__ import annotations

import functools
import threading
import time
from typing import TYPE_CHECKING, Any

from services.data_mirror.task_entry import run_task
from services.data_mirror.work import TaskResult, TaskSpec

if TYPE_CHECKING:
    from pyspark import Broadcast


class SlotRun:
    """The Spark job running `spec`; `result` is set once the job is over, however it ended."""

    def __init__(self, context: Any, spec: TaskSpec, secrets: Broadcast[dict[str, str]] | None) -> None:
        self.context = context
        self.spec = spec
        self.secrets = secrets
        self.result: TaskResult | None = None
        self.handover_requested = False
        self.started = time.monotonic()
        self.job_group = f"strait-{spec.flow}-{spec.slot}-{spec.generation}"
        self._thread = threading.Thread(target=self._run, name=self.job_group, daemon=True)

    def start(self) -> SlotRun:
        """Submit the job (returns at once)."""
        self._thread.start()
        return self

    @property
    def done(self) -> bool:
        """True once the job ended (its task handed over, failed, or the job was lost)."""
        return not self._thread.is_alive()

    def join(self, timeout_s: float) -> None:
        """Wait up to `timeout_s` for the job to end."""
        self._thread.join(timeout_s)

    def cancel(self) -> None:
        """Stop the job without a commit (shutdown's last resort): what it did not commit is copied again."""
        self.context.cancelJobGroup(self.job_group)

    def _run(self) -> None:
        spec = self.spec
        try:
            self.context.setJobGroup(self.job_group, f"copy {spec.flow} slot {spec.slot}", interruptOnCancel=True)
            task = functools.partial(run_task, secrets=self.secrets)
            results: list[TaskResult] = self.context.parallelize([spec], 1).map(task).collect()
            self.result = results[0]
        except Exception as exc:  # a lost executor or worker: the slot starts again from the committed progress
            text = str(exc).strip()
            first_line = text.splitlines()[0] if text else type(exc).__name__
            self.result = TaskResult(spec.flow, spec.slot, spec.generation, error=f"spark job failed: {first_line}")
