"""A planned action's wait for RPO 0: every partition copied to the source's end, every group's last commit
checkpointed on the target (blocking, bounded). The flow keeps running meanwhile; nothing is changed here."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from shared.dr.flow_reads import FlowReads
from shared.kafka.group_offsets import GroupAdmin
from shared.partition_key import PartitionKey

POLL_S = 1.0


@dataclass(frozen=True)
class Drain:
    """What to wait for: the flow's source partitions, and which groups count."""

    reads: FlowReads
    partitions: list[PartitionKey]
    wanted_group: Callable[[str], bool]


@dataclass
class Drained:
    """The outcome: `problem` is None once drained; `source_ends` are the ends the copy reached."""

    problem: str | None
    source_ends: dict[PartitionKey, int] = field(default_factory=dict)


def _copy_behind(drain: Drain) -> tuple[list[str], dict[PartitionKey, tuple[int, int]]]:
    marks = drain.reads.source_marks(drain.partitions)
    progress = drain.reads.progress()
    behind = []
    for key, (start, end) in sorted(marks.items()):
        copied = progress[key].next_offset if key in progress else start
        if copied < end:
            behind.append(f"{key[0]}-{key[1]} copied to {copied} of {end}")
    return behind, marks


def groups_behind(drain: Drain, marks: dict[PartitionKey, tuple[int, int]]) -> list[str]:
    """Group-partitions whose last commit on the source is not what their checkpoint on the target says."""
    reads = drain.reads
    admin = GroupAdmin.connect(reads.flow.source, reads.flow.source_admin_props(), timeout_s=reads.timeout_s)
    groups = [group for group in admin.list_groups().states if drain.wanted_group(group)]
    if not groups:
        return []
    commits, errors = admin.committed_offsets(groups)
    behind = [f"group {group}: {error}" for group, error in sorted(errors.items())]
    checkpoints = reads.checkpoints()
    syncs = None
    for group, offsets in sorted(commits.items()):
        for key, committed in sorted(offsets.items()):
            start, end = marks.get(key, (0, 0))
            if key not in marks or end <= start:
                continue  # not a copied partition, or nothing in it to translate
            checkpoint = checkpoints.get(group, {}).get(reads.remote(key))
            if checkpoint is not None and checkpoint.upstream_offset == committed.offset:
                continue
            syncs = syncs or reads.syncs()
            translated = syncs.translate_exact(key[0], key[1], committed.offset)
            if checkpoint is not None and translated == checkpoint.downstream_offset:
                continue  # a commit past a marker translates where the last checkpoint already points
            have = "none" if checkpoint is None else f"{checkpoint.upstream_offset}"
            behind.append(f"group {group} {key[0]}-{key[1]} committed {committed.offset}, checkpointed {have}")
    return behind


def drain_copy_and_checkpoints(
    drain: Drain, *, timeout_s: float, sleep: Callable[[float], None] = time.sleep
) -> Drained:
    """Wait until nothing is behind, or `timeout_s` passed (then `problem` names the first of what is)."""
    deadline = time.monotonic() + timeout_s
    while True:
        copy, marks = _copy_behind(drain)
        groups = [] if copy else groups_behind(drain, marks)
        if not copy and not groups:
            return Drained(None, {key: end for key, (_start, end) in marks.items()})
        if time.monotonic() >= deadline:
            parts = []
            if copy:
                parts.append(f"{len(copy)} partition(s) behind (first: {copy[0]})")
            if groups:
                parts.append(f"{len(groups)} group partition(s) not checkpointed (first: {groups[0]})")
            return Drained("; ".join(parts))
        sleep(POLL_S)
