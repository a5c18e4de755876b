"""MM2's own RemoteClusterUtils.translateOffsets for many groups in one JVM, each call timed (benchmark tooling)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from shared.localkafka import HarnessError, kafka_classpath
from shared.localkafka.jars import compile_against_kafka, java_binary

JAVA_SOURCE = Path(__file__).resolve().parent / "java" / "TranslateMany.java"
_MAIN_CLASS = "TranslateMany"


@dataclass(frozen=True)
class GroupTranslation:
    """One translateOffsets call: the group, how long the call took, and its answer {(topic, partition): offset}."""

    group: str
    seconds: float
    offsets: dict[tuple[str, int], int]


def compile_helper(workdir: Path) -> Path:
    """Compile TranslateMany.java into `workdir`/classes (once per workdir) and return that directory."""
    out = workdir / "classes"
    if (out / f"{_MAIN_CLASS}.class").exists():
        return out
    compile_against_kafka(JAVA_SOURCE, out)
    return out


def translate_groups(
    props: Mapping[str, str],
    remote_cluster_alias: str,
    groups: Sequence[str],
    workdir: Path,
    *,
    call_timeout_s: float = 60,
) -> list[GroupTranslation]:
    """Call RemoteClusterUtils.translateOffsets(props, alias, group) for each group in order, in one JVM.

    `props` are MirrorClientConfig properties of the cluster holding the checkpoints; every call builds its own
    MirrorClient and reads the checkpoints topic from the start, as MM2's library does.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    classes = compile_helper(workdir)
    groups_file = workdir / "groups.txt"
    groups_file.write_text("".join(f"{group}\n" for group in groups))
    command = [
        java_binary(),
        "-Xmx512m",
        "-Dlog4j2.level=WARN",
        "-cp",
        os.pathsep.join([kafka_classpath(quiet=True), str(classes)]),
        _MAIN_CLASS,
        remote_cluster_alias,
        str(int(call_timeout_s * 1000)),
        str(groups_file),
        *(f"{key}={value}" for key, value in props.items()),
    ]
    result = subprocess.run(
        command, capture_output=True, text=True, timeout=60 + call_timeout_s * max(1, len(groups)), check=False
    )
    if result.returncode != 0:
        raise HarnessError(f"{_MAIN_CLASS} failed (exit {result.returncode}): {result.stderr[-2000:]}")
    answers: list[GroupTranslation] = []
    for line in result.stdout.splitlines():
        if not line.startswith('{"group"'):
            continue  # a log line of the Java client
        raw = json.loads(line)
        offsets = {(topic, int(partition)): int(offset) for topic, partition, offset in raw["offsets"]}
        answers.append(GroupTranslation(raw["group"], raw["micros"] / 1e6, offsets))
    if len(answers) != len(groups):
        raise HarnessError(f"{_MAIN_CLASS} answered {len(answers)} of {len(groups)} groups: {result.stderr[-2000:]}")
    return answers
