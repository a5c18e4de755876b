"""Failover: write a group's translated offsets into the group on the target (alterConsumerGroupOffsets).

Refused while the group has members on the target. Partitions where the group already committed further on
the target keep their offset unless `allow_rewind` (as MM2's group offset sync never rewinds a group).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Literal

from services.offset_translator.errors import ConflictError
from services.offset_translator.models import FailoverPartition, FailoverRequest, FailoverResult, GroupOffsets
from shared.kafka.group_members import GroupMembership
from shared.kafka.group_offsets import CommittedOffset, GroupAdmin, GroupBusyError


def plan(
    offsets: GroupOffsets, current: Mapping[tuple[str, int], int], *, allow_rewind: bool
) -> list[FailoverPartition]:
    """Per partition: set the translated offset, leave it (already there), or keep a further target offset."""
    partitions = []
    for entry in offsets.offsets:
        previous = current.get((entry.topic, entry.partition))
        action: Literal["set", "unchanged", "kept-ahead"]
        if previous == entry.offset:
            action = "unchanged"
        elif previous is not None and previous > entry.offset and not allow_rewind:
            action = "kept-ahead"
        else:
            action = "set"
        partitions.append(
            FailoverPartition(
                topic=entry.topic,
                partition=entry.partition,
                offset=entry.offset,
                previous_offset=previous,
                action=action,
            )
        )
    return partitions


class FailoverExecutor:
    """Applies failovers with one admin client per target cluster, created on first use."""

    def __init__(self, admin_props: Mapping[str, Mapping[str, str]], *, timeout_s: float = 30) -> None:
        self._admin_props = {alias: dict(props) for alias, props in admin_props.items()}
        self._timeout_s = timeout_s
        self._admins: dict[str, GroupAdmin] = {}

    def _admin(self, cluster: str) -> GroupAdmin:
        admin = self._admins.get(cluster)
        if admin is None:
            admin = GroupAdmin.connect(cluster, self._admin_props[cluster], timeout_s=self._timeout_s)
            self._admins[cluster] = admin
        return admin

    def _membership(self, cluster: str, group: str) -> GroupMembership:
        return self._admin(cluster).membership(group)

    async def run(self, offsets: GroupOffsets, request: FailoverRequest) -> FailoverResult:
        """Check the group is idle on the target, plan, and (unless a dry run) write; ConflictError if active."""
        return await asyncio.to_thread(self._run, offsets, request)

    def _run(self, offsets: GroupOffsets, request: FailoverRequest) -> FailoverResult:
        target, group = offsets.target, offsets.group
        admin = self._admin(target)
        membership = self._membership(target, group)
        if membership.active:
            raise ConflictError(
                f"group '{group}' has {membership.members} active member(s) on {target} "
                f"(state {membership.state}); stop its consumers there before failing over"
            )
        committed, errors = admin.committed_offsets([group])
        if group in errors:
            raise errors[group]
        current = {tp: entry.offset for tp, entry in committed.get(group, {}).items()}
        partitions = plan(offsets, current, allow_rewind=request.allow_rewind)
        metadata = {(entry.topic, entry.partition): entry.metadata for entry in offsets.offsets}
        changes = {
            (p.topic, p.partition): CommittedOffset(p.offset, metadata[(p.topic, p.partition)])
            for p in partitions
            if p.action == "set"
        }
        if not request.dry_run and changes:
            failure = admin.alter_offsets({group: changes}).get(group)
            if isinstance(failure, GroupBusyError):
                raise ConflictError(f"group '{group}' became active on {target}: {failure}") from failure
            if failure is not None:
                raise failure
        return FailoverResult(
            group=group,
            source=offsets.source,
            target=target,
            dry_run=request.dry_run,
            applied=not request.dry_run and bool(changes),
            group_state=membership.state,
            partitions=partitions,
        )
