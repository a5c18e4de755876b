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
from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition

from shared.kafka.factories import AdminClient, aio_consumer, confluent_admin
from shared.kafka.topics import create_topic

_log = structlog.get_logger(__name__)
OnChange = Callable[[frozenset[int]], None]


class _Listener(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, lease: ShardLease) -> None:
        self._lease = lease

    async def on_partitions_revoked(self, revoked: list[TopicPartition]) -> None:
        self._lease._set_owned(self._lease.owned - {tp.partition for tp in revoked})

    async def on_partitions_assigned(self, assigned: list[TopicPartition]) -> None:
        self._lease._set_owned(self._lease.owned | {tp.partition for tp in assigned})


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
        self._props = dict(props)
        self.group_id = group_id
        self.topic = topic
        self.shards = shards
        self._replication_factor = replication_factor
        self._instance_id = instance_id
        self._session_timeout_ms = session_timeout_ms
        self._on_change = on_change
        self.owned: frozenset[int] = frozenset()
        self._consumer: AIOKafkaConsumer | None = None
        self._task: asyncio.Task[None] | None = None
        self._admin: AdminClient | None = None
        self.changed = asyncio.Event()

    @property
    def is_leader(self) -> bool:
        """True while this instance owns shard 0 (the whole job when there is one shard)."""
        return 0 in self.owned

    def owns(self, key: str) -> bool:
        """True if the shard of `key` (stable hash) is owned here."""
        return stable_shard(key, self.shards) in self.owned

    async def wait_change(self, stop: asyncio.Event, timeout_s: float) -> None:
        """Sleep up to `timeout_s`, waking early when `stop` is set or the owned shards change."""
        waiters = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(self.changed.wait())]
        try:
            await asyncio.wait(waiters, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()
            for waiter in waiters:
                with contextlib.suppress(asyncio.CancelledError):
                    await waiter

    def _set_owned(self, owned: set[int] | frozenset[int]) -> None:
        before, self.owned = self.owned, frozenset(owned)
        if before != self.owned:
            _log.info("lease_changed", group=self.group_id, owned=sorted(self.owned))
            self.changed.set()
            if self._on_change is not None:
                self._on_change(self.owned)

    async def start(self) -> None:
        """Create the coordination topic if needed and join the group."""
        if self._admin is None:  # one per lease, not one per start: a start is retried while the cluster is down
            self._admin = confluent_admin(self._props)
        await asyncio.to_thread(
            create_topic,
            self._admin,
            self.topic,
            partitions=self.shards,
            replication_factor=self._replication_factor,
            configs={"retention.ms": "3600000"},
        )
        await self._join()
        self._task = asyncio.create_task(self._keep_membership(), name=f"lease:{self.group_id}")

    async def _join(self) -> None:
        self._consumer = aio_consumer(
            self._props,
            group_id=self.group_id,
            client_id=f"{self.group_id}-{self._instance_id}" if self._instance_id else None,
            enable_auto_commit=False,
            session_timeout_ms=self._session_timeout_ms,
            heartbeat_interval_ms=max(300, self._session_timeout_ms // 6),
            metadata_max_age_ms=5000,
        )
        await self._consumer.start()
        self._consumer.subscribe([self.topic], listener=_Listener(self))

    async def _keep_membership(self) -> None:
        """Poll so the group keeps us; after an error give the shards up (no double work) and rejoin."""
        while True:
            try:
                if self._consumer is None:
                    await self._join()
                assert self._consumer is not None
                await self._consumer.getmany(timeout_ms=1000)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # aiokafka errors while the cluster is unreachable or rebalancing
                _log.warning("lease_membership_error", group=self.group_id, error=repr(exc))
                self._set_owned(frozenset())
                consumer, self._consumer = self._consumer, None
                if consumer is not None:
                    with contextlib.suppress(Exception):
                        await consumer.stop()
                await asyncio.sleep(1)

    async def stop(self) -> None:
        """Leave the group so another instance takes over at once; safe to call twice."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._consumer is not None:
            consumer, self._consumer = self._consumer, None
            await consumer.stop()
        self._set_owned(frozenset())


def stable_shard(key: str, shards: int) -> int:
    """The same shard for the same key in every process (unlike Python's salted hash())."""
    value = 2166136261
    for byte in key.encode():
        value = ((value ^ byte) * 16777619) & 0xFFFFFFFF
    return value % shards
