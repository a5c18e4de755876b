"""Move consumer groups to positions on one cluster (blocking): only groups with no members there, never rewinding
a partition where a group already stands further unless asked. The flow's failover and failback, and the
translator's one-group failover, all write positions through here."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from shared.dr.positions import plan_partition
from shared.dr.records import GroupMove, GroupSkipped
from shared.errors import KafkaOperationError
from shared.kafka.group_offsets import CommittedOffset, GroupAdmin, GroupBusyError
from shared.partition_key import PartitionKey


@dataclass(frozen=True)
class Position:
    """Where a group resumes in one partition, how that was found, and the commit metadata carried over."""

    offset: int
    how: str = "checkpoint"
    metadata: str = ""


@dataclass
class GroupTarget:
    """One group's wanted positions on the cluster it moves to."""

    group: str
    positions: dict[PartitionKey, Position] = field(default_factory=dict)


class GroupMover:
    """Writes group positions on the cluster `cluster` (its admin client made on first use)."""

    def __init__(self, cluster: str, admin_props: Mapping[str, str], *, timeout_s: float = 30) -> None:
        self.cluster = cluster
        self._admin = GroupAdmin.connect(cluster, admin_props, timeout_s=timeout_s)

    def move(
        self, targets: list[GroupTarget], *, dry_run: bool, allow_rewind: bool = False
    ) -> tuple[list[GroupMove], list[GroupSkipped]]:
        """Plan and (unless `dry_run`) write each group's positions; a group with members here is skipped."""
        moved: list[GroupMove] = []
        skipped: list[GroupSkipped] = []
        for target in targets:
            if not target.positions:
                continue
            try:
                move = self._move_one(target, dry_run=dry_run, allow_rewind=allow_rewind)
            except GroupBusyError as exc:
                skipped.append(GroupSkipped(group=target.group, reason=f"became active on {self.cluster}: {exc}"))
                continue
            except KafkaOperationError as exc:
                skipped.append(GroupSkipped(group=target.group, reason=str(exc)))
                continue
            if isinstance(move, GroupSkipped):
                skipped.append(move)
            else:
                moved.append(move)
        return moved, skipped

    def _move_one(self, target: GroupTarget, *, dry_run: bool, allow_rewind: bool) -> GroupMove | GroupSkipped:
        group = target.group
        membership = self._admin.membership(group)
        if membership.active:
            return GroupSkipped(
                group=group,
                reason=f"{membership.members} active member(s) on {self.cluster} (state {membership.state}): "
                "stop its consumers there, then move it",
            )
        committed, errors = self._admin.committed_offsets([group])
        if group in errors:
            raise errors[group]
        current = {key: entry.offset for key, entry in committed.get(group, {}).items()}
        partitions = [
            plan_partition(topic, partition, wanted.offset, current.get((topic, partition)),
                           allow_rewind=allow_rewind, how=wanted.how)
            for (topic, partition), wanted in sorted(target.positions.items())
        ]  # fmt: skip
        changes = {
            (p.topic, p.partition): CommittedOffset(p.offset, target.positions[(p.topic, p.partition)].metadata)
            for p in partitions
            if p.action == "set"
        }
        if changes and not dry_run:
            failure = self._admin.alter_offsets({group: changes}).get(group)
            if failure is not None:
                raise failure
        return GroupMove(group=group, cluster=self.cluster, partitions=partitions)
