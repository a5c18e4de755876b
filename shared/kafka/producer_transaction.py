"""The open transaction of the batch path's transactional producer: which target partitions are in it, adding the
others before their first batch, and ending it at the coordinator (`transaction_coordinator`).

A partition's batches may go out only once the coordinator answered that the partition is in the transaction (the
broker refuses a transactional write to a partition it was not told of); the partitions waiting are added together,
one AddPartitionsToTxn at a time. Nothing is sent while no transaction is open.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from shared.kafka.transaction_coordinator import TransactionCoordinator
from shared.partition_key import PartitionKey


class ProducerTransaction:
    """The producer's id and epoch at the coordinator, and its open transaction; `changed(error)` is called when an
    addition is answered (None) or failed (the producer fails with it)."""

    def __init__(self, coordinator: TransactionCoordinator, changed: Callable[[BaseException | None], None]) -> None:
        self.coordinator = coordinator
        self._changed = changed
        self.producer_id = -1
        self.producer_epoch = -1
        self.open = False
        self._added: set[PartitionKey] = set()
        self._adding: asyncio.Task[None] | None = None

    @property
    def transactional_id(self) -> str:
        return self.coordinator.transactional_id

    async def init(self) -> tuple[int, int]:
        """A new epoch of the id's producer: every earlier producer of the id is fenced, its transaction aborted."""
        self.producer_id, self.producer_epoch = await self.coordinator.init_producer()
        return self.producer_id, self.producer_epoch

    def begin(self) -> None:
        self.open = True

    def admits(self, key: PartitionKey, waiting: set[PartitionKey]) -> bool:
        """True when `key`'s batches may go out now; else False, with `key` put in `waiting` when it is to be added."""
        if not self.open:
            return False
        if key in self._added:
            return True
        waiting.add(key)
        return False

    def add(self, waiting: set[PartitionKey]) -> None:
        """Ask the coordinator to add `waiting` (unless an addition is under way: they are asked for after it)."""
        if not waiting or self._adding is not None:
            return
        keys = sorted(waiting)

        async def add() -> None:
            error: BaseException | None = None
            try:
                await self.coordinator.add_partitions(self.producer_id, self.producer_epoch, keys)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # fenced, not allowed, the coordinator gone for good
                error = exc
            else:
                self._added.update(keys)
            finally:
                self._adding = None
            self._changed(error)

        self._adding = asyncio.ensure_future(add())

    async def end(self, *, commit: bool) -> None:
        """Commit or abort the open transaction (a transaction nothing was written in has nothing to end)."""
        if self._adding is not None:
            self._adding.cancel()
            self._adding = None
        if self._added:
            await self.coordinator.end(self.producer_id, self.producer_epoch, commit=commit)
        self.open = False
        self._added = set()
