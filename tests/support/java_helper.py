"""Java helpers of the tests (tests/support/java/*.java), compiled once per process against the harness's Kafka
classpath and run with java: where a test needs Kafka's own client code (MM2's, the Admin API's) as the anchor."""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from shared.localkafka import HarnessError, kafka_classpath
from shared.localkafka.jars import compile_against_kafka, java_binary

JAVA_DIR = Path(__file__).resolve().parent / "java"
_lock = threading.Lock()
_compiled: dict[str, Path] = {}


def compiled_classes(main_class: str) -> Path:
    """The directory holding `main_class`.class, compiling tests/support/java/`main_class`.java the first time."""
    with _lock:
        if main_class in _compiled:
            return _compiled[main_class]
        out = Path(tempfile.mkdtemp(prefix=f"strait-{main_class.lower()}-"))
        atexit.register(shutil.rmtree, out, ignore_errors=True)
        compile_against_kafka(JAVA_DIR / f"{main_class}.java", out)
        _compiled[main_class] = out
        return out


def run_java_helper(main_class: str, args: list[str], timeout_s: float, stdin: str | None = None) -> str:
    """Run the helper with `args` (and `stdin`, UTF-8); its stdout (HarnessError naming its stderr if it fails)."""
    classpath = os.pathsep.join([kafka_classpath(quiet=True), str(compiled_classes(main_class))])
    command = [java_binary(), "-Xmx256m", "-Dlog4j2.level=WARN", "-cp", classpath, main_class, *args]
    result = subprocess.run(
        command, input=stdin, capture_output=True, text=True, encoding="utf-8", timeout=timeout_s, check=False
    )
    if result.returncode != 0:
        raise HarnessError(f"{main_class} failed (exit {result.returncode}): {result.stderr[-2000:]}")
    return result.stdout
