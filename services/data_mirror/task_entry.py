"""The Spark entry point of a copy task: connect, then run the task loop with the flow's copier."""

from __future__ import annotations

import gc
import time
from typing import TYPE_CHECKING

from services.data_mirror.batch_copy import BatchCopier
from services.data_mirror.copier import describe
from services.data_mirror.partition_copy import Clock
from services.data_mirror.record_copy import RecordCopier
from services.data_mirror.settings import PROG
from services.data_mirror.task_clients import TaskClients, connect
from services.data_mirror.task_loop import TaskLoop
from services.data_mirror.task_secrets import with_secrets
from services.data_mirror.work import TaskResult, TaskSpec
from shared.kafka.client_names import name_process

if TYPE_CHECKING:
    from pyspark import Broadcast


def run_task(spec: TaskSpec, secrets: Broadcast[dict[str, str]] | None = None) -> TaskResult:
    """Spark entry point: copy until asked to hand over; errors come back as data, never as a lost record.

    `secrets` is the driver's broadcast of the client secrets the spec's settings name by placeholder."""
    began = time.monotonic()
    _freeze_what_is_alive()
    name_process(PROG)  # a Spark worker's clients are the data-mirror's
    try:
        spec = with_secrets(spec, secrets.value if secrets is not None else {})
        clients = connect(spec)
    except Exception as exc:  # no clients, nothing copied: the driver retries the slot
        return TaskResult(spec.flow, spec.slot, spec.generation, error=f"connecting: {describe(exc)}")
    result = task_loop(spec, clients).run()
    result.duration_s = time.monotonic() - began
    return result


def task_loop(spec: TaskSpec, clients: TaskClients) -> TaskLoop:
    """The loop for `spec`: batch forwarding when the flow asks for it, else record by record; either copier's
    producer transaction when the flow is exactly-once."""
    clock = Clock(retry_s=spec.blocked_retry_s)
    copier = BatchCopier(spec, clients, clock) if spec.copy_batches else RecordCopier(spec, clients, clock)
    return TaskLoop(spec, clients, copier, clock, copier if spec.exactly_once else None)


def _freeze_what_is_alive() -> None:
    """Keep the cyclic GC off the copy loop's back: objects alive before copying (PySpark's and our modules,
    tens of thousands) are never scanned again. Without this, a full collection under load stalled a task for
    25-50 ms (measured in the latency benchmark), in the middle of the records it was copying."""
    gc.collect()
    gc.freeze()
