"""Spark starts on its own thread while the driver sets its flows up, then warms the Python workers.

Starting Spark (a JVM) takes seconds, and so does the flows' set-up (internal topics, progress, the first
discovery of thousands of partitions): they do not depend on each other, so they overlap. Once Spark runs, one
short job per core starts PySpark's Python workers and imports the copy path in them; with worker reuse on
(Strait's default) the copy tasks then start in those warm workers instead of paying the fork and the imports
after the first plan.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

import structlog

from services.data_mirror.spark_session import spark_environment, start_spark

_log = structlog.get_logger("data-mirror")
WARM_UP_GROUP = "strait-warm-up"
STOP_CHECK_S = 0.2
REUSE_NEEDS = ("spark.python.worker.reuse", "spark.python.use.daemon")


def import_copy_path(_: object) -> None:
    """Run in a Python worker: import what a copy task needs, so the first task finds it loaded."""
    import services.data_mirror.task_entry  # noqa: F401  (the import is the point)


def local_cores(master: str) -> int | None:
    """How many cores a `local[...]` master runs tasks on; None for a cluster's master (Spark knows, later)."""
    if master == "local":
        return 1
    if master.startswith("local[") and master.endswith("]"):
        inner = master[len("local[") : -1].split(",")[0].strip()
        if inner == "*":  # the cores this process may run on (a container's cpuset), as Spark counts them
            return len(os.sched_getaffinity(0)) or 1
        if inner.isdigit():
            return max(1, int(inner))
    return None


def workers_reused(conf: Mapping[str, str]) -> bool:
    """True when a Python worker outlives its task: worker reuse on, and workers forked by PySpark's daemon (without
    the daemon each task starts a worker of its own)."""
    return all(conf.get(key, "true").strip().lower() == "true" for key in REUSE_NEEDS)


class SparkStart:
    """Starts the session on a daemon thread at construction; `session()` waits for it."""

    def __init__(self, conf: Mapping[str, str]) -> None:
        self._conf = dict(conf)
        spark_environment(self._conf)  # here, before other threads make Kafka clients that read the environment
        self._started: Future[Any] = Future()
        self._thread = threading.Thread(target=self._run, name="spark-start", daemon=True)
        self._thread.start()

    def session(self, stop: threading.Event) -> Any | None:
        """The running SparkSession (raises what starting it raised); None once `stop` is set before it runs."""
        while not stop.is_set():
            try:
                return self._started.result(timeout=STOP_CHECK_S)
            except FutureTimeout:
                continue
        return None

    def started(self) -> Any | None:
        """The session if it started by now, else None (for a stop that must not wait on a start under way)."""
        if self._started.done() and self._started.exception() is None:
            return self._started.result()
        return None

    def wait(self, timeout_s: float) -> None:
        """Wait up to `timeout_s` for the start (and the warm-up) to end, however they end."""
        self._thread.join(timeout_s)

    def _run(self) -> None:
        began = time.monotonic()
        try:
            session = start_spark(self._conf)
        except BaseException as exc:
            self._started.set_exception(exc)
            return
        self._started.set_result(session)
        _log.info("spark_started", seconds=round(time.monotonic() - began, 1))
        if not workers_reused(self._conf):
            return  # a worker would not outlive its warm-up task
        self._warm_up(session)

    @staticmethod
    def _warm_up(session: Any) -> None:
        began = time.monotonic()
        context = session.sparkContext
        cores = max(1, context.defaultParallelism)
        try:
            context.setJobGroup(WARM_UP_GROUP, "start the Python workers", interruptOnCancel=True)
            context.parallelize(range(cores), cores).foreach(import_copy_path)
        except Exception as exc:  # only a head start is lost: the copy tasks start their workers themselves
            _log.warning("spark_warm_up_failed", error=str(exc).strip().splitlines()[0] if str(exc).strip() else "")
            return
        _log.info("spark_workers_warm", workers=cores, seconds=round(time.monotonic() - began, 1))
