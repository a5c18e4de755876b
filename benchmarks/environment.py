"""What the numbers were measured on: the machine and every version that matters."""

from __future__ import annotations

import os
import platform
import re
import subprocess
from pathlib import Path

import psutil

from shared.localkafka.jars import DEFAULT_POM, REPO_ROOT, java_binary


def machine() -> dict[str, str]:
    """Cores, memory, CPU model, OS and load at the time of the call."""
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    return {
        "CPU cores (logical)": str(psutil.cpu_count(logical=True)),
        "CPU model": _cpu_model(),
        "memory": f"{psutil.virtual_memory().total / 2**30:.1f} GiB",
        "OS": f"{_os_name()} (kernel {platform.release()})",
        "load average (1, 5, 15 min) at start": load,
    }


def versions() -> dict[str, str]:
    """Kafka (brokers, MM2 and the perf tool come from the same pom), Strait, Python, PySpark, clients, Java."""
    import confluent_kafka
    import pyspark

    return {
        "Apache Kafka (brokers, MirrorMaker 2, perf tool)": kafka_version(),
        "Strait (git)": _git_revision(),
        "Python": platform.python_version(),
        "PySpark": pyspark.__version__,
        "confluent-kafka / librdkafka": f"{confluent_kafka.__version__} / {confluent_kafka.libversion()[0]}",
        "Java": _java_version(),
    }


def kafka_version(pom: Path = DEFAULT_POM) -> str:
    """The pinned `kafka.version` of deploy/kafka/pom.xml."""
    match = re.search(r"<kafka\.version>([^<]+)</kafka\.version>", pom.read_text())
    return match.group(1) if match else "unknown"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _os_name() -> str:
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return platform.system()


def _git_revision() -> str:
    try:
        head = _run(["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"])
        dirty = _run(["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--untracked-files=no"])
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{head} (with uncommitted changes)" if dirty else head


def _java_version() -> str:
    try:
        result = subprocess.run([java_binary(), "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    lines = (result.stderr or result.stdout).splitlines()
    return " / ".join(line.strip() for line in lines[:2]) if lines else "unknown"


def _run(argv: list[str]) -> str:
    return subprocess.run(argv, capture_output=True, text=True, check=True, timeout=30).stdout.strip()
