"""Group offset sync decisions (`sync.group.offsets.enabled`): which target groups move, and to where.

Invariants: only a target group that is absent (or DEAD) or EMPTY is written; a partition moves only
forward, to the group's latest checkpoint, so a target group that is ahead is never rewound; a group
with members is left alone and reported once per state change, never retried into an error storm.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from shared.kafka.group_offsets import CommittedOffset
from shared.partition_key import PartitionKey
from shared.records import Checkpoint

IDLE_STATES = frozenset({"EMPTY", "DEAD"})


def is_idle(state: str | None) -> bool:
    """True for a target group that may be written: absent (None), DEAD or EMPTY."""
    return state is None or state in IDLE_STATES


@dataclass(frozen=True, slots=True)
class SyncDecision:
    """`sync`: write `offsets`; `active`: the group has members; `current`: nothing to move forward."""

    action: Literal["sync", "active", "current"]
    offsets: dict[PartitionKey, CommittedOffset] = field(default_factory=dict)


def decide_group_sync(
    state: str | None,
    target_offsets: Mapping[PartitionKey, CommittedOffset],
    checkpoints: Mapping[PartitionKey, Checkpoint],
) -> SyncDecision:
    """What to do with one target group in `state`, given its committed offsets and its latest checkpoints."""
    if not is_idle(state):
        return SyncDecision("active")
    moves: dict[PartitionKey, CommittedOffset] = {}
    for partition, checkpoint in checkpoints.items():
        current = target_offsets.get(partition)
        if current is not None and current.offset >= checkpoint.downstream_offset:
            continue  # ahead or equal on the target: never rewind
        moves[partition] = CommittedOffset(checkpoint.downstream_offset, checkpoint.metadata)
    return SyncDecision("sync", moves) if moves else SyncDecision("current")


class ActiveGroups:
    """Target groups found with members; `observe` says whether a group's state changed since last seen."""

    def __init__(self) -> None:
        self._states: dict[str, str] = {}

    def observe(self, group: str, state: str | None) -> bool:
        """Record `state` (None or idle: not active); True if it differs from the last observation."""
        active_state = None if is_idle(state) else state
        previous = self._states.get(group)
        if active_state is None:
            self._states.pop(group, None)
        else:
            self._states[group] = active_state
        return previous != active_state

    def forget_except(self, groups: set[str]) -> None:
        """Drop groups no longer considered (deleted, filtered out, or owned by another instance)."""
        for group in [g for g in self._states if g not in groups]:
            del self._states[group]

    def states(self) -> dict[str, str]:
        """Active groups and their states."""
        return dict(self._states)

    def __len__(self) -> int:
        return len(self._states)
