"""The source side of one flow: which consumer groups this instance checkpoints and their committed offsets.

The full group list is read every `refresh.groups.interval.seconds` (and whenever the owned shards change);
between refreshes only the groups found relevant (offsets on replicated topics) are read. Offsets of many
groups travel in one request where the brokers allow it (Kafka 3.0+), else one request per group.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import structlog

from shared.config import FlowConfig
from shared.errors import KafkaOperationError
from shared.filters import GroupFilter
from shared.kafka.group_offsets import GroupAdmin, GroupOffsets
from shared.kafka.group_requests import GroupOffsetsClient, UnsupportedBatching

Owns = Callable[[str], bool]


class SourceGroups:
    """Lists groups (filtered, sharded by `owns`) and reads their committed offsets on the flow's source."""

    def __init__(self, flow: FlowConfig, group_filter: GroupFilter, owns: Owns, *, timeout_s: float) -> None:
        self._flow = flow
        self._filter = group_filter
        self._owns = owns
        self._refresh_enabled = flow.settings.refresh_groups_enabled
        self._refresh_interval_s = flow.settings.refresh_groups_interval_s
        self._admin = GroupAdmin.connect(flow.source, flow.source_admin_props(), timeout_s=timeout_s)
        self._offsets = GroupOffsetsClient(flow.source, flow.source_admin_props(), timeout_s=timeout_s)
        self._batched = True
        self._candidates: list[str] = []
        self._refresh_due = True
        self._next_refresh = 0.0
        self.relevant: list[str] = []
        self.log = structlog.get_logger("checkpoint").bind(flow=flow.name)

    def refresh_soon(self) -> None:
        """List every group again at the next read (newly owned shards hold groups not read yet)."""
        self._refresh_due = True

    async def read(self) -> tuple[dict[str, GroupOffsets], dict[str, KafkaOperationError]]:
        """Committed offsets of this instance's groups, and per-group failures."""
        now = time.monotonic()
        refresh = self._refresh_due or (self._refresh_enabled and now >= self._next_refresh)
        if refresh:
            listing = await asyncio.to_thread(self._admin.list_groups)
            self._candidates = sorted(g for g in listing.states if self._filter.should_replicate_group(g))
            self._refresh_due = False
            self._next_refresh = now + self._refresh_interval_s
        groups = self._candidates if refresh else self.relevant
        return await self._committed_offsets([group for group in groups if self._owns(group)])

    async def _committed_offsets(
        self, groups: list[str]
    ) -> tuple[dict[str, GroupOffsets], dict[str, KafkaOperationError]]:
        if self._batched:
            try:
                return await self._offsets.committed_offsets(groups)
            except UnsupportedBatching as exc:
                self._batched = False
                self.log.warning("batched_offset_fetch_unsupported", cluster=self._flow.source, error=str(exc))
        return await asyncio.to_thread(self._admin.committed_offsets, groups)

    async def close(self) -> None:
        """Disconnect."""
        await self._offsets.close()
