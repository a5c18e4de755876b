"""Ask MM2's own client code (RemoteClusterUtils.translateOffsets) what it reads from a checkpoints topic.

Compiles tests/support/java/TranslateOffsets.java once per process against the harness's Kafka classpath
(which holds connect-mirror-client) and runs it with java. Test tooling only.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from shared.localkafka import HarnessError, kafka_classpath
from shared.localkafka.jars import compile_against_kafka, java_binary

JAVA_SOURCE = Path(__file__).resolve().parent / "java" / "TranslateOffsets.java"
_MAIN_CLASS = "TranslateOffsets"
_lock = threading.Lock()
_compiled: Path | None = None


@dataclass(frozen=True, order=True)
class TranslatedOffset:
    """One partition of MM2's answer: where the group resumes on the cluster that holds the checkpoints."""

    topic: str
    partition: int
    offset: int
    metadata: str = ""


def compiled_classes() -> Path:
    """The directory holding TranslateOffsets.class, compiling it the first time."""
    global _compiled
    with _lock:
        if _compiled is not None:
            return _compiled
        out = Path(tempfile.mkdtemp(prefix="strait-mm2-client-"))
        atexit.register(shutil.rmtree, out, ignore_errors=True)
        compile_against_kafka(JAVA_SOURCE, out)
        _compiled = out
        return out


def translate_offsets_detailed(
    props: Mapping[str, str], remote_cluster_alias: str, group: str, *, timeout_s: float = 30
) -> list[TranslatedOffset]:
    """Run RemoteClusterUtils.translateOffsets with MirrorClientConfig `props`; sorted by topic, partition.

    `props` holds bootstrap.servers of the cluster with the checkpoints (and security or replication
    policy keys); `remote_cluster_alias` is the cluster the group consumed on.
    """
    classpath = os.pathsep.join([kafka_classpath(quiet=True), str(compiled_classes())])
    command = [
        java_binary(),
        "-Xmx256m",
        "-Dlog4j2.level=WARN",
        "-cp",
        classpath,
        _MAIN_CLASS,
        remote_cluster_alias,
        group,
        str(int(timeout_s * 1000)),
        *(f"{key}={value}" for key, value in props.items()),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s + 60)
    if result.returncode != 0:
        raise HarnessError(f"{_MAIN_CLASS} failed (exit {result.returncode}): {result.stderr[-2000:]}")
    answers: list[TranslatedOffset] = []
    for line in result.stdout.splitlines():
        if not line.startswith('{"topic"'):
            continue  # anything else is a log line of the Java client
        raw = json.loads(line)
        answers.append(TranslatedOffset(raw["topic"], int(raw["partition"]), int(raw["offset"]), raw["metadata"]))
    return answers


def translate_offsets(
    props: Mapping[str, str], remote_cluster_alias: str, group: str, *, timeout_s: float = 30
) -> dict[tuple[str, int], int]:
    """MM2's translation as {(topic, partition): offset}; see `translate_offsets_detailed`."""
    return {
        (answer.topic, answer.partition): answer.offset
        for answer in translate_offsets_detailed(props, remote_cluster_alias, group, timeout_s=timeout_s)
    }
