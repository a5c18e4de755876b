"""CPU seconds and peak RSS of a replicator's whole process tree, sampled while it runs.

A tool is one or more root processes (Strait: topic-sync and data-mirror; MM2: one JVM). Each root's
descendants are found on every sample (Spark's JVM, PySpark's worker daemon and the workers it forks),
named by role, and their RSS summed per role and in total. Summed RSS counts a page shared by several processes
once per process (PySpark's workers share the interpreter and the modules of the daemon they are forked from), so
the total PSS is kept beside it (each shared page split between its processes: what they take together).
CPU seconds are the user+system time of every process ever seen, as last sampled, so a worker that exits
between samples loses at most one interval.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import psutil

SAMPLE_INTERVAL_S = 0.25
MIB = 1024 * 1024

Classifier = Callable[[str, psutil.Process, bool], str]  # (root name, process, is root) -> role


@dataclass
class Usage:
    """What one tool run cost: per role and in total (roles: e.g. "Spark JVM", "MM2 JVM")."""

    tool: str
    scenario: str
    cpu_s: dict[str, float] = field(default_factory=dict)
    peak_rss_mib: dict[str, float] = field(default_factory=dict)
    peak_total_rss_mib: float = 0.0
    peak_total_pss_mib: float = 0.0
    processes: dict[str, int] = field(default_factory=dict)  # role -> distinct pids seen
    records: int = 0  # records the run copied, for CPU per million records
    startup_cpu_s: float | None = None  # CPU seconds spent before the first record reached the target
    window_cpu_s: float | None = None  # CPU seconds within a steady-load window of `window_s` seconds
    window_s: float | None = None

    @property
    def total_cpu_s(self) -> float:
        """CPU seconds of every process of the tool."""
        return sum(self.cpu_s.values())

    def as_dict(self) -> dict[str, object]:
        """Plain data for the raw samples in the report."""
        return {
            "tool": self.tool,
            "scenario": self.scenario,
            "records": self.records,
            "cpu_s": {k: round(v, 2) for k, v in self.cpu_s.items()},
            "total_cpu_s": round(self.total_cpu_s, 2),
            "startup_cpu_s": None if self.startup_cpu_s is None else round(self.startup_cpu_s, 2),
            "window_cpu_s": None if self.window_cpu_s is None else round(self.window_cpu_s, 2),
            "window_s": self.window_s,
            "peak_rss_mib": {k: round(v, 1) for k, v in self.peak_rss_mib.items()},
            "peak_total_rss_mib": round(self.peak_total_rss_mib, 1),
            "peak_total_pss_mib": round(self.peak_total_pss_mib, 1),
            "processes": dict(self.processes),
        }


class UsageSampler:
    """Samples a set of root processes and their descendants in a background thread until `finish`."""

    def __init__(self, tool: str, scenario: str, roots: Mapping[str, int], classify: Classifier) -> None:
        self.usage = Usage(tool, scenario)
        self._roots = {name: psutil.Process(pid) for name, pid in roots.items()}
        self._classify = classify
        self._cpu: dict[int, tuple[str, float]] = {}  # pid -> (role, last user+system seconds)
        self._pids: dict[str, set[int]] = {}
        self._current_rss_mib = 0.0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name=f"usage-{tool}", daemon=True)

    def start(self) -> UsageSampler:
        """Take a first sample and keep sampling in the background."""
        self.sample()
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(SAMPLE_INTERVAL_S):
            self.sample()

    def sample(self) -> None:
        """One pass over every process of the tool."""
        rss: dict[str, float] = {}
        pss = 0.0
        for name, root in self._roots.items():
            try:
                tree = [(root, True)] + [(child, False) for child in root.children(recursive=True)]
            except psutil.Error:
                continue
            for process, is_root in tree:
                try:
                    with process.oneshot():
                        role = self._classify(name, process, is_root)
                        times = process.cpu_times()
                        memory = process.memory_full_info()
                        resident = memory.rss
                except psutil.Error:
                    continue  # exited meanwhile
                with self._lock:
                    self._cpu[process.pid] = (role, times.user + times.system)
                    self._pids.setdefault(role, set()).add(process.pid)
                rss[role] = rss.get(role, 0.0) + resident / MIB
                pss += memory.pss / MIB
        with self._lock:
            self._current_rss_mib = sum(rss.values())
            peaks = self.usage.peak_rss_mib
            for role, value in rss.items():
                peaks[role] = max(peaks.get(role, 0.0), value)
            self.usage.peak_total_rss_mib = max(self.usage.peak_total_rss_mib, sum(rss.values()))
            self.usage.peak_total_pss_mib = max(self.usage.peak_total_pss_mib, pss)

    def current_rss_mib(self) -> float:
        """Resident memory of the whole tool now, summed over its processes (takes a sample first)."""
        self.sample()
        with self._lock:
            return self._current_rss_mib

    def cpu_total(self) -> float:
        """CPU seconds of the whole tool so far (takes a sample first)."""
        self.sample()
        with self._lock:
            return sum(seconds for _role, seconds in self._cpu.values())

    def finish(self, records: int = 0) -> Usage:
        """Stop sampling (after one last sample) and return the totals; call before stopping the tool.

        A second call returns the first call's totals unchanged.
        """
        if self._stop.is_set():
            return self.usage
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        self.sample()
        with self._lock:
            cpu: dict[str, float] = {}
            for role, seconds in self._cpu.values():
                cpu[role] = cpu.get(role, 0.0) + seconds
            self.usage.cpu_s = cpu
            self.usage.processes = {role: len(pids) for role, pids in self._pids.items()}
        self.usage.records = records
        return self.usage
