"""One checkpoint round's decisions, with no I/O and no clock: groups' committed offsets and their last
checkpoints in, the checkpoints to write and how each group stands out (MM2's MirrorCheckpointTask without its
admin clients). The flow unit reads the offsets, feeds them in here group by group and writes the result.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from services.checkpoint.rules import CheckpointRules
from shared.kafka.group_offsets import GroupOffsets
from shared.partition_key import PartitionKey
from shared.records import Checkpoint

LastCheckpoints = Callable[[str], Mapping[PartitionKey, Checkpoint]]


@dataclass(slots=True)
class RoundPlan:
    """What one round decided."""

    checkpoints: list[Checkpoint] = field(default_factory=list)
    misses: int = 0  # partitions of replicated topics with no offset sync to translate by
    relevant: list[str] = field(default_factory=list)  # groups with offsets on replicated topics
    unsettled: list[str] = field(default_factory=list)  # groups whose translation later offset syncs may improve
    final: dict[str, bool] = field(default_factory=dict)  # group -> relevant: no later offset sync changes these


class Checkpointer:
    """Applies the flow's checkpoint rules to one group at a time, against the group's last checkpoints."""

    def __init__(self, rules: CheckpointRules, last_checkpoints: LastCheckpoints) -> None:
        self._rules = rules
        self._last = last_checkpoints

    def add(self, plan: RoundPlan, group: str, offsets: GroupOffsets) -> None:
        """Decide `group`'s checkpoints into `plan`."""
        if not self._rules.relevant(offsets):
            plan.final[group] = False
            return
        plan.relevant.append(group)
        outcome = self._rules.for_group(group, offsets, self._last(group))
        plan.checkpoints.extend(outcome.checkpoints)
        plan.misses += outcome.misses
        if outcome.misses or outcome.inexact:
            plan.unsettled.append(group)
        else:
            plan.final[group] = True
