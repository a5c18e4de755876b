"""The transaction coordinator of one transactional id, as the batch path's exactly-once producer talks to it.

Kafka's producer keeps the same conversation (KIP-98): InitProducerId at the coordinator gives the producer id and
a new epoch, which fences every earlier producer of the id and aborts what it left open; each partition is added
to the transaction (AddPartitionsToTxn) before its first batch of the transaction is written; EndTxn commits or
aborts, and the coordinator writes the markers that `read_committed` readers wait for. A coordinator that moved or
is loading, and a transaction still being ended, are asked again (with a backoff, within `timeout_s`); a fenced
producer, or one the coordinator no longer knows, is the task's failure: its successor owns the id now.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar, cast

from aiokafka.client import AIOKafkaClient, ConnectionGroup, CoordinationType
from aiokafka.errors import KafkaError as AioKafkaError
from aiokafka.protocol.transaction import AddPartitionsToTxnRequest, EndTxnRequest, InitProducerIdRequest

from shared.errors import KafkaOperationError
from shared.kafka.error_classes import ErrorClass, error_class, error_name
from shared.kafka.error_codes import COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR
from shared.partition_key import PartitionKey
from shared.retry import Backoff, retry_async

# Mostly a transaction still being ended (CONCURRENT_TRANSACTIONS: its markers are being written, a few ms per
# hundred partitions): asked again soon, as Kafka's producer asks again after 20 ms, and never slower than 0.25 s.
COORDINATOR_BACKOFF = Backoff(first_s=0.02, max_s=0.25)
T = TypeVar("T")


class TransactionCoordinator:
    """InitProducerId, AddPartitionsToTxn and EndTxn for `transactional_id`, at its coordinator."""

    def __init__(
        self, client: AIOKafkaClient, transactional_id: str, *, transaction_timeout_ms: int, timeout_s: float
    ) -> None:
        self._client = client
        self.transactional_id = transactional_id
        self._transaction_timeout_ms = transaction_timeout_ms
        self._timeout_s = timeout_s
        self._node: int | None = None

    async def init_producer(self) -> tuple[int, int]:
        """(producer id, epoch): a new epoch of the id's producer, which fences every earlier one."""
        request = InitProducerIdRequest(self.transactional_id, self._transaction_timeout_ms)

        async def ask() -> tuple[int, int]:
            response = await self._send(request, "init producer id")
            self._check(response.error_code, "InitProducerId")
            return int(response.producer_id), int(response.producer_epoch)

        return await self._retried(ask)

    async def add_partitions(self, producer_id: int, epoch: int, keys: Iterable[PartitionKey]) -> None:
        """Add `keys` to the open transaction (before their first batch of it is written)."""
        by_topic: dict[str, list[int]] = {}
        for topic, partition in keys:
            by_topic.setdefault(topic, []).append(partition)
        request = AddPartitionsToTxnRequest(self.transactional_id, producer_id, epoch, list(by_topic.items()))

        async def ask() -> None:
            response = await self._send(request, "add partitions to transaction")
            for topic, partitions in response.errors:
                for partition, code in partitions:
                    self._check(code, f"AddPartitionsToTxn {topic}-{partition}")

        await self._retried(ask)

    async def end(self, producer_id: int, epoch: int, *, commit: bool) -> None:
        """Commit (or abort) the open transaction; once this returns, its markers are being written."""
        request = EndTxnRequest(self.transactional_id, producer_id, epoch, commit)

        async def ask() -> None:
            response = await self._send(request, "commit transaction" if commit else "abort transaction")
            self._check(response.error_code, "EndTxn")

        await self._retried(ask)

    async def _retried(self, ask: Callable[[], Awaitable[T]]) -> T:
        try:
            found = await asyncio.wait_for(retry_async(ask, backoff=COORDINATOR_BACKOFF), self._timeout_s)
        except TimeoutError as exc:
            raise KafkaOperationError(
                f"transaction coordinator of {self.transactional_id!r} did not answer within {self._timeout_s:.0f}s",
                operation="transaction",
            ) from exc
        return cast(T, found)  # (retry_async's None means a stop event was set, and none is given)

    async def _send(self, request: Any, operation: str) -> Any:
        if self._node is None:
            try:
                self._node = await self._client.coordinator_lookup(CoordinationType.TRANSACTION, self.transactional_id)
            except (AioKafkaError, TimeoutError, OSError) as exc:
                raise KafkaOperationError(f"finding the transaction coordinator: {exc!r}", operation=operation) from exc
        try:
            return await self._client.send(self._node, request, group=ConnectionGroup.COORDINATION)
        except (AioKafkaError, TimeoutError, OSError) as exc:
            self._node = None  # found again at the next attempt
            raise KafkaOperationError(f"{operation}: {exc!r}", operation=operation) from exc

    def _check(self, code: int, what: str) -> None:
        """Raise for an error answer: retriable ones (a coordinator moved or loading, a transaction still being
        ended) are asked again; the rest (fenced, an invalid state, not allowed) fail the caller."""
        if code == 0:
            return
        if code in (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE):
            self._node = None
        retriable = error_class(code) is ErrorClass.RETRY
        raise KafkaOperationError(f"{what}: {error_name(code)}", operation="transaction", retriable=retriable)
