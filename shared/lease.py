"""Split work between instances through Kafka consumer-group membership.

A coordination topic with N partitions stands for N shards; the group's assignment decides which
instance owns which shard. One shard gives "one active instance, the rest stand by" (topic-sync,
acl-sync); many shards spread groups over checkpoint instances. Nothing is ever written to the topic:
membership alone is the lease, and a dead instance loses it when its session times out.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping

import structlog

from shared.events import wait_any
from shared.kafka.lease_group import LeaseGroupMember
from shared.retry import Backoff, retry_async

_log = structlog.get_logger(__name__)
OnChange = Callable[[frozenset[int]], None]
REJOIN_BACKOFF = Backoff(first_s=1.0, max_s=1.0)
RETENTION_MS = 3_600_000


class ShardLease:
    """Owns a changing subset of `shards` shards; `owned` is always safe to read."""

    def __init__(
        self,
        props: Mapping[str, str],
        *,
        group_id: str,
        topic: str,
        shards: int = 1,
        replication_factor: int = -1,
        instance_id: str = "",
        session_timeout_ms: int = 6000,
        on_change: OnChange | None = None,
    ) -> None:
        self.group_id = group_id
        self.topic = topic
        self.shards = shards
        self._replication_factor = replication_factor
        self._on_change = on_change
        self.owned: frozenset[int] = frozenset()
        self._member = LeaseGroupMember(
            props,
            group_id=group_id,
            topic=topic,
            client_id=f"{group_id}-{instance_id}" if instance_id else None,
            session_timeout_ms=session_timeout_ms,
            on_assigned=lambda shards: self._set_owned(self.owned | shards),
            on_revoked=lambda shards: self._set_owned(self.owned - shards),
        )
        self._task: asyncio.Task[None] | None = None
        self.changed = asyncio.Event()

    @property
    def is_leader(self) -> bool:
        """True while this instance owns shard 0 (the whole job when there is one shard)."""
        return 0 in self.owned

    def owns(self, key: str) -> bool:
        """True if the shard of `key` (stable hash) is owned here."""
        return stable_shard(key, self.shards) in self.owned

    async def wait_change(self, stop: asyncio.Event, timeout_s: float, *also: asyncio.Event) -> None:
        """Sleep up to `timeout_s`, waking early when `stop` or one of `also` is set or the owned shards change."""
        await wait_any((stop, self.changed, *also), timeout_s)

    def _set_owned(self, owned: set[int] | frozenset[int]) -> None:
        before, self.owned = self.owned, frozenset(owned)
        if before != self.owned:
            _log.info("lease_changed", group=self.group_id, owned=sorted(self.owned))
            self.changed.set()
            if self._on_change is not None:
                self._on_change(self.owned)

    async def start(self) -> None:
        """Create the coordination topic if needed and join the group; raises a StraitError if either fails."""
        await self._member.create_topic(
            partitions=self.shards, replication_factor=self._replication_factor, retention_ms=RETENTION_MS
        )
        await self._member.join()
        self._task = asyncio.create_task(self._keep_membership(), name=f"lease:{self.group_id}")

    async def _keep_membership(self) -> None:
        """Poll so the group keeps us; after an error give the shards up (no double work) and rejoin."""
        await retry_async(self._take_part, backoff=REJOIN_BACKOFF, retry_on=lambda _: True, on_failure=self._lost)

    async def _take_part(self) -> None:
        while True:
            try:
                await self._member.poll()
            except Exception:
                self._set_owned(frozenset())
                await self._member.leave(quietly=True)
                raise

    def _lost(self, exc: BaseException, retry_s: float) -> None:
        _log.warning("lease_membership_error", group=self.group_id, error=repr(exc), retry_s=retry_s)

    async def stop(self) -> None:
        """Leave the group so another instance takes over at once; safe to call twice."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self._member.leave()
        self._set_owned(frozenset())


def stable_shard(key: str, shards: int) -> int:
    """The same shard for the same key in every process (unlike Python's salted hash())."""
    value = 2166136261
    for byte in key.encode():
        value = ((value ^ byte) * 16777619) & 0xFFFFFFFF
    return value % shards
