"""Membership in a consumer group on a coordination topic, consuming nothing (asyncio, aiokafka).

The group's partition assignment is the lease: the partitions assigned to this member are the shards it owns.
`shared/lease.py` keeps the owned set and rejoins after failures; this module is the client side of it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition

from shared.kafka.errors import translate_kafka_error
from shared.kafka.factories import AdminClient, aio_consumer, confluent_admin
from shared.kafka.topics import create_topic

ShardsChanged = Callable[[set[int]], None]
POLL_TIMEOUT_MS = 1000


class _Listener(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, on_assigned: ShardsChanged, on_revoked: ShardsChanged) -> None:
        self._on_assigned = on_assigned
        self._on_revoked = on_revoked

    async def on_partitions_revoked(self, revoked: list[TopicPartition]) -> None:
        self._on_revoked({tp.partition for tp in revoked})

    async def on_partitions_assigned(self, assigned: list[TopicPartition]) -> None:
        self._on_assigned({tp.partition for tp in assigned})


class LeaseGroupMember:
    """One member of `group_id` on `topic`; assignment changes are reported through the two callbacks."""

    def __init__(
        self,
        props: Mapping[str, str],
        *,
        group_id: str,
        topic: str,
        client_id: str | None,
        session_timeout_ms: int,
        on_assigned: ShardsChanged,
        on_revoked: ShardsChanged,
    ) -> None:
        self._props = dict(props)
        self._group_id = group_id
        self._topic = topic
        self._client_id = client_id
        self._session_timeout_ms = session_timeout_ms
        self._listener = _Listener(on_assigned, on_revoked)
        self._admin: AdminClient | None = None
        self._consumer: AIOKafkaConsumer | None = None

    @property
    def joined(self) -> bool:
        """True between a successful `join` and the next failure or `leave`."""
        return self._consumer is not None

    async def create_topic(self, *, partitions: int, replication_factor: int, retention_ms: int) -> None:
        """Create the coordination topic if missing (nothing is written to it: retention only bounds a mistake)."""
        if self._admin is None:  # one per member, not one per try: the call is retried while the cluster is down
            self._admin = confluent_admin(self._props)
        await asyncio.to_thread(
            create_topic,
            self._admin,
            self._topic,
            partitions=partitions,
            replication_factor=replication_factor,
            configs={"retention.ms": str(retention_ms)},
        )

    async def join(self) -> None:
        """Connect and subscribe; the assignment arrives through the callbacks while `poll` runs."""
        consumer = aio_consumer(
            self._props,
            group_id=self._group_id,
            client_id=self._client_id,
            enable_auto_commit=False,
            session_timeout_ms=self._session_timeout_ms,
            heartbeat_interval_ms=max(300, self._session_timeout_ms // 6),
            metadata_max_age_ms=5000,
        )
        try:
            await consumer.start()
            consumer.subscribe([self._topic], listener=self._listener)
        except Exception as exc:  # aiokafka errors: unreachable, not allowed to join
            with contextlib.suppress(Exception):
                await consumer.stop()
            raise translate_kafka_error(exc, operation="join lease group", resource=self._group_id) from exc
        self._consumer = consumer

    async def poll(self) -> None:
        """Take part in the group for about a second (heartbeats, rebalances); raises KafkaOperationError."""
        if self._consumer is None:
            await self.join()
        assert self._consumer is not None
        try:
            await self._consumer.getmany(timeout_ms=POLL_TIMEOUT_MS)
        except Exception as exc:  # aiokafka errors while the cluster is unreachable or rebalancing
            raise translate_kafka_error(exc, operation="keep lease", resource=self._group_id) from exc

    async def leave(self, *, quietly: bool = False) -> None:
        """Leave the group (another member takes the shards at once); `quietly` ignores a failure to say so."""
        consumer, self._consumer = self._consumer, None
        if consumer is None:
            return
        if quietly:
            with contextlib.suppress(Exception):
                await consumer.stop()
        else:
            await consumer.stop()
