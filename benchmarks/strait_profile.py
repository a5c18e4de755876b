"""py-spy on Strait's Python processes during a copy: where the executors' time goes.

Two recorders follow data-mirror and every Python process below it (PySpark's daemon forks the
workers that run the copy tasks): one samples busy threads only (where the CPU goes), one samples
every thread (where a task's wall time goes, waiting included). The full benchmark profiles an extra,
unmeasured copy (py-spy costs CPU on a small machine); a quick run profiles its measured Strait copy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchmarks.console import say
from benchmarks.contenders import STRAIT, Mirror, StraitMirror
from benchmarks.copy_run import CopyResult, copy_topic
from benchmarks.datasets import Dataset
from benchmarks.lab import Lab
from benchmarks.profiling import Profile, PySpyRecorder, parse_collapsed

WORKERS, DRIVER, DAEMON = "Spark Python workers", "data-mirror driver", "PySpark daemon"
IN_TASKS = "Spark Python workers, inside copy tasks"

# Phases of a copy task, by the frame a sample is under (inclusive shares of the worker samples).
PHASES = {
    "copy loop (consume, produce, callbacks)": r"(^|\.)_copy \(",
    "per-record delivery callbacks": r"(^|\.)on_delivery \(",
    "commits (progress, offset syncs; the final flush)": r"(^|\.)_commit \(",
    "task start (progress read, offset look-ups)": r"(^|\.)_start \(",
    "inside a copy task (all of the above)": r"^run_task \(",
}


def group_of(process: str, frames: list[str]) -> str:
    """Workers run tasks under daemon.py's `worker`; the daemon itself only waits; the rest is the driver."""
    if any(frame.startswith("worker (") and "daemon.py" in frame for frame in frames):
        return WORKERS
    if "pyspark" in process:
        return DAEMON
    return DRIVER


def task_group_of(process: str, frames: list[str]) -> str:
    """Worker samples taken inside a copy task, apart from everything else."""
    if group_of(process, frames) == WORKERS and any(frame.startswith("run_task (") for frame in frames):
        return IN_TASKS
    return "other"


class StraitProfiler:
    """Attaches to a Strait copy (see `copy_topic(attach=...)`) and summarises what py-spy saw."""

    def __init__(self, lab: Lab) -> None:
        self.out = lab.run_dir("profile")
        self.busy_text = ""
        self.wall_text = ""

    def attach(self, mirror: Mirror) -> Callable[[], None]:
        """Start both recorders on data-mirror's process tree; returns the function that stops them."""
        assert isinstance(mirror, StraitMirror)
        pid = mirror.data_mirror_pid
        busy = PySpyRecorder(pid, self.out / "busy.txt", subprocesses=True).start()
        wall = PySpyRecorder(pid, self.out / "wall.txt", subprocesses=True, idle=True).start()

        def detach() -> None:
            self.busy_text, self.wall_text = busy.stop(), wall.stop()

        return detach

    def summary(self, result: CopyResult, *, measured: bool) -> dict[str, Any]:
        """Shares per phase, top functions, for the report and its notes."""
        busy, wall = parse_collapsed(self.busy_text, group_of), parse_collapsed(self.wall_text, group_of)
        in_tasks = parse_collapsed(self.busy_text, task_group_of).get(IN_TASKS)
        wall_in_tasks = parse_collapsed(self.wall_text, task_group_of).get(IN_TASKS)
        return {
            "records": result.dataset.records,
            "dataset": result.dataset.label,
            "copy_s": round(result.copy_s, 2),
            "note": "py-spy at 50 Hz on "
            + ("the measured Strait copy (quick run)" if measured else "an extra, unmeasured Strait copy"),
            "worker_wall_shares": _shares(wall.get(WORKERS), PHASES),
            "worker_busy_shares": _shares(busy.get(WORKERS), PHASES),
            "busy_in_tasks": in_tasks.as_dict() if in_tasks else {},
            "busy_lines_in_tasks": _lines(in_tasks),
            "wall_lines_in_tasks": _lines(wall_in_tasks),
            "busy": {label: profile.as_dict() for label, profile in busy.items()},
            "wall": {label: profile.as_dict() for label, profile in wall.items() if label == WORKERS},
        }


def profile_copy(lab: Lab, dataset: Dataset, *, timeout_s: float) -> dict[str, Any]:
    """One extra Strait copy under py-spy; its summary (also kept in `lab.profile`)."""
    say("Strait: one more copy under py-spy (profile, not measured)")
    profiler = StraitProfiler(lab)
    result = copy_topic(lab, STRAIT, dataset, timeout_s=timeout_s, attach=profiler.attach)
    lab.profile = profiler.summary(result, measured=False)
    return lab.profile


def _shares(profile: Profile | None, patterns: dict[str, str]) -> dict[str, float]:
    if profile is None or not profile.samples:
        return {}
    return {name: round(profile.share(pattern), 4) for name, pattern in patterns.items()}


def _lines(profile: Profile | None) -> list[list[object]]:
    """Strait's own source lines where a copy task's samples ended: [path:line, share, code]."""
    if profile is None:
        return []
    return [[where, round(share, 4), code] for where, share, code in profile.top_lines(8, "data_mirror")]
