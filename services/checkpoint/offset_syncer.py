"""Group offset sync for one flow: move idle target groups forward to their latest checkpoints."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import structlog

from services.checkpoint.checkpoint_table import CheckpointTable
from services.checkpoint.group_sync import ActiveGroups, decide_group_sync, is_idle
from services.checkpoint.metrics import CheckpointMetrics
from shared.errors import StraitError
from shared.kafka.group_offsets import CommittedOffset, GroupAdmin, GroupBusyError
from shared.kafka.group_requests import GroupOffsetsClient, UnsupportedBatching
from shared.partition_key import PartitionKey


class GroupOffsetSyncer:
    """One round per `sync.group.offsets.interval.seconds`; groups with members are reported, not written."""

    def __init__(
        self,
        flow: str,
        target: GroupAdmin,
        offsets: GroupOffsetsClient,
        table: CheckpointTable,
        metrics: CheckpointMetrics,
    ) -> None:
        self._flow = flow
        self._target = target
        self._offsets = offsets
        self._table = table
        self._metrics = metrics
        self.active = ActiveGroups()
        self.partitions_synced = 0
        self.log = structlog.get_logger("checkpoint").bind(flow=flow)

    async def run_round(self, groups: Sequence[str]) -> list[StraitError]:
        """Sync `groups` (this instance's groups that have checkpoints); return per-group failures."""
        listing = await asyncio.to_thread(self._target.list_groups)
        considered: dict[str, str | None] = {}
        for group in groups:
            state = listing.states.get(group)
            if state is None and not listing.complete:
                continue  # a broker did not answer: the group may exist there, decide next round
            considered[group] = state
            self._observe(group, state)
        self.active.forget_except(set(groups))
        idle = [group for group, state in considered.items() if is_idle(state)]
        try:
            target_offsets, failures = await self._offsets.committed_offsets(idle)
        except UnsupportedBatching:  # brokers older than Kafka 3.0: one request per group
            target_offsets, failures = await asyncio.to_thread(self._target.committed_offsets, idle)
        errors: list[StraitError] = list(failures.values())
        changes: dict[str, dict[PartitionKey, CommittedOffset]] = {}
        for group in idle:
            if group in failures:
                continue
            decision = decide_group_sync(considered[group], target_offsets.get(group, {}), self._table.for_group(group))
            if decision.action == "sync":
                changes[group] = decision.offsets
        refused = await self._offsets.commit_offsets(changes) if changes else {}
        moved = 0
        for group, offsets in changes.items():
            error = refused.get(group)
            if error is None:
                moved += len(offsets)
                self.log.debug("group_offsets_synced", group=group, partitions=len(offsets))
            elif isinstance(error, GroupBusyError):
                self._observe(group, "ACTIVE")  # members joined between the listing and the write
            else:
                errors.append(error)
        if moved:
            self.partitions_synced += moved
            self._metrics.group_offsets_synced.labels(self._flow).inc(moved)
            self.log.info("target_groups_moved_forward", groups=len(changes) - len(refused), partitions=moved)
        self._metrics.groups_skipped_active.labels(self._flow).set(len(self.active))
        return errors

    async def close(self) -> None:
        """Disconnect from the target."""
        await self._offsets.close()

    def _observe(self, group: str, state: str | None) -> None:
        if not self.active.observe(group, state):
            return
        if is_idle(state):
            self.log.info("target_group_idle", group=group, state=state or "absent")
        else:
            self.log.warning(
                "target_group_active",
                group=group,
                state=state,
                action="left alone: group offset sync writes only groups without members",
            )
