"""Ask MM2's own client code (RemoteClusterUtils.translateOffsets) what it reads from a checkpoints topic.

Runs tests/support/java/TranslateOffsets.java (tests/support/java_helper.py compiles it once per process against
the harness's Kafka classpath, which holds connect-mirror-client). Test tooling only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from tests.support.java_helper import run_java_helper

_MAIN_CLASS = "TranslateOffsets"


@dataclass(frozen=True, order=True)
class TranslatedOffset:
    """One partition of MM2's answer: where the group resumes on the cluster that holds the checkpoints."""

    topic: str
    partition: int
    offset: int
    metadata: str = ""


def translate_offsets_detailed(
    props: Mapping[str, str], remote_cluster_alias: str, group: str, *, timeout_s: float = 30
) -> list[TranslatedOffset]:
    """Run RemoteClusterUtils.translateOffsets with MirrorClientConfig `props`; sorted by topic, partition.

    `props` holds bootstrap.servers of the cluster with the checkpoints (and security or replication
    policy keys); `remote_cluster_alias` is the cluster the group consumed on.
    """
    settings = [f"{key}={value}" for key, value in props.items()]
    args = [remote_cluster_alias, group, str(int(timeout_s * 1000)), *settings]
    stdout = run_java_helper(_MAIN_CLASS, args, timeout_s=timeout_s + 60)
    answers: list[TranslatedOffset] = []
    for line in stdout.splitlines():
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
