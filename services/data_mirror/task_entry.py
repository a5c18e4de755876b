"""The Spark entry point of a copy task: connect, then copy record by record or by forwarding batches."""

from __future__ import annotations

import gc
import time
from typing import TYPE_CHECKING

from services.data_mirror.batch_copy import BatchCopyTask
from services.data_mirror.copy_task import CopyTask, describe
from services.data_mirror.task_clients import connect
from services.data_mirror.task_secrets import with_secrets
from services.data_mirror.work import TaskResult, TaskSpec

if TYPE_CHECKING:
    from pyspark import Broadcast


def run_task(spec: TaskSpec, secrets: Broadcast[dict[str, str]] | None = None) -> TaskResult:
    """Spark entry point: copy until asked to hand over; errors come back as data, never as a lost record.

    `secrets` is the driver's broadcast of the client secrets the spec's settings name by placeholder."""
    began = time.monotonic()
    _freeze_what_is_alive()
    try:
        spec = with_secrets(spec, secrets.value if secrets is not None else {})
        clients = connect(spec)
    except Exception as exc:  # no clients, nothing copied: the driver retries the slot
        return TaskResult(spec.flow, spec.slot, spec.generation, error=f"connecting: {describe(exc)}")
    task = BatchCopyTask(spec, clients) if spec.copy_batches else CopyTask(spec, clients)
    result = task.run()
    result.duration_s = time.monotonic() - began
    return result


def _freeze_what_is_alive() -> None:
    """Keep the cyclic GC off the copy loop's back: objects alive before copying (PySpark's and our modules,
    tens of thousands) are never scanned again. Without this, a full collection under load stalled a task for
    25-50 ms (measured in the latency benchmark), in the middle of the records it was copying."""
    gc.collect()
    gc.freeze()
