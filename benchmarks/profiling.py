"""py-spy on Strait's Python processes during a copy: where the executors' and the driver's CPU goes.

`py-spy record --format raw` writes collapsed stacks (`frame;frame;... count`). Without `--idle` only
threads that were running are sampled (shares of busy time: where the CPU goes); with `--idle` every
thread is (shares of wall time: where a task waits).
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

RATE_HZ = 50
Grouper = Callable[[str, list[str]], str]  # (process frame, stack frames root first) -> group label
_FRAME = re.compile(r"^(?P<func>.+?) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")
REPO_ROOT = Path(__file__).resolve().parents[1]


def py_spy_binary() -> str | None:
    """The py-spy executable next to this Python, or on PATH."""
    local = Path(sys.executable).with_name("py-spy")
    return str(local) if local.exists() else shutil.which("py-spy")


@dataclass
class Profile:
    """Aggregated samples of one process group (e.g. the Spark Python workers)."""

    label: str
    samples: int = 0
    self_samples: Counter[str] = field(default_factory=Counter)
    total_samples: Counter[str] = field(default_factory=Counter)
    self_lines: Counter[str] = field(default_factory=Counter)  # "path:line" of the innermost frame

    def top_lines(self, count: int = 8, within: str = "") -> list[tuple[str, float, str]]:
        """Source lines where samples ended (path containing `within`): (path:line, share, the code there)."""
        if not self.samples:
            return []
        lines = [(where, n) for where, n in self.self_lines.most_common() if within in where][:count]
        return [(where, n / self.samples, source_line(where)) for where, n in lines]

    def top_self(self, count: int = 12) -> list[tuple[str, float]]:
        """Functions where the busy time was spent (leaf frames), as (function, share 0..1)."""
        return [(name, n / self.samples) for name, n in self.self_samples.most_common(count)] if self.samples else []

    def top_total(self, count: int = 12) -> list[tuple[str, float]]:
        """Functions on the stack (inclusive), as (function, share 0..1)."""
        return [(name, n / self.samples) for name, n in self.total_samples.most_common(count)] if self.samples else []

    def share(self, pattern: str) -> float:
        """Inclusive share of busy samples with a frame matching `pattern` (a regex on "function (file)")."""
        if not self.samples:
            return 0.0
        regex = re.compile(pattern)
        return max((n for name, n in self.total_samples.items() if regex.search(name)), default=0) / self.samples

    def as_dict(self) -> dict[str, object]:
        """Plain data for the report's raw samples."""
        return {
            "label": self.label,
            "samples": self.samples,
            "top_self": [[name, round(share, 4)] for name, share in self.top_self(25)],
            "top_total": [[name, round(share, 4)] for name, share in self.top_total(25)],
            "top_lines": [[where, round(share, 4), code] for where, share, code in self.top_lines(15)],
        }


def parse_collapsed(text: str, group: Grouper) -> dict[str, Profile]:
    """Aggregate py-spy's raw (collapsed) output per process group (`group` names a stack's process)."""
    profiles: dict[str, Profile] = {}
    for line in text.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        parts = stack.split(";")
        process = next((part for part in reversed(parts) if part.startswith("process ")), "")  # innermost
        raw = [part for part in parts if not part.startswith(("process ", "thread "))]
        frames = [_frame_name(part) for part in raw]
        if not frames:
            continue
        label = group(process, frames)
        profile = profiles.setdefault(label, Profile(label))
        profile.samples += count
        profile.self_samples[frames[-1]] += count
        location = _FRAME.match(raw[-1].strip())
        if location and location["line"]:
            profile.self_lines[f"{location['file']}:{location['line']}"] += count
        for name in set(frames):
            profile.total_samples[name] += count
    return profiles


def _frame_name(frame: str) -> str:
    """`run_task (services/data_mirror/executor.py:60)` -> `run_task (data_mirror/executor.py)`."""
    match = _FRAME.match(frame.strip())
    if not match:
        return frame.strip()
    path = match["file"].replace("\\", "/")
    short = "/".join(path.split("/")[-2:])
    return f"{match['func']} ({short})"


class PySpyRecorder:
    """`py-spy record` attached to one process (and optionally its subprocesses) until `stop`."""

    def __init__(self, pid: int, output: Path, *, subprocesses: bool, idle: bool = False) -> None:
        binary = py_spy_binary()
        if binary is None:
            raise RuntimeError("py-spy is not installed (pip install py-spy)")
        self.output = output
        self.argv = [binary, "record", "--pid", str(pid), "--format", "raw", "--output", str(output)]
        self.argv += ["--rate", str(RATE_HZ), "--nonblocking"]
        if subprocesses:
            self.argv.append("--subprocesses")
        if idle:
            self.argv.append("--idle")
        self.log_path = output.with_suffix(".log")
        self.popen: subprocess.Popen[bytes] | None = None

    def start(self) -> PySpyRecorder:
        """Attach in the background."""
        with open(self.log_path, "ab") as log:
            self.popen = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        return self

    def stop(self) -> str:
        """SIGINT (py-spy writes its file), wait; the collapsed stacks."""
        if self.popen is not None and self.popen.poll() is None:
            self.popen.send_signal(signal.SIGINT)
            try:
                self.popen.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(timeout=10)
        return self.output.read_text(errors="replace") if self.output.exists() else ""


def source_line(location: str) -> str:
    """The code at `path:line` when the path is one of this repository's files (else empty)."""
    path, _, number = location.rpartition(":")
    candidate = REPO_ROOT / path
    if not number.isdigit() or not candidate.is_file():
        return ""
    lines = candidate.read_text(errors="replace").splitlines()
    index = int(number) - 1
    return lines[index].strip() if 0 <= index < len(lines) else ""
