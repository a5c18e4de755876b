"""Where the batch copier's next fetch of each partition starts, and the leader-epoch checks before it (KIP-320).

A partition last fetched under an older leader epoch than the metadata's is fetched again only once the new leader
said where that epoch ends in its log: an end below the position is where an unclean election truncated the log
(`resume.diverged_at`), and the partition is copied again from there.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass

from shared.errors import KafkaOperationError
from shared.kafka.leader_epochs import NO_EPOCH
from shared.partition_key import PartitionKey


@dataclass
class Fetching:
    """Where the next fetch of a partition starts, and up to where each record goes to the target on its own.

    `epoch` is the leader epoch of the last batch fetched; `validated` the current leader epoch under which the
    position was last known to be on the leader's log."""

    position: int
    one_by_one_until: int = -1
    epoch: int = NO_EPOCH
    validated: int = NO_EPOCH


class EpochChecks:
    """The epoch-end questions out to source leaders, one per partition at a time."""

    def __init__(self) -> None:
        self._asked: dict[PartitionKey, asyncio.Task[tuple[int, int]]] = {}

    def pending(self) -> list[asyncio.Task[tuple[int, int]]]:
        return list(self._asked.values())

    def checked(
        self,
        key: PartitionKey,
        fetching: Fetching,
        current: int,
        ask: Callable[[PartitionKey, int], Awaitable[tuple[int, int]]],
    ) -> bool:
        """True when the partition may be fetched under leader epoch `current`: nothing fetched yet, no epoch
        known, or no newer one than the last checked. Otherwise the leader is asked (once) and False returned."""
        if fetching.epoch == NO_EPOCH or current == NO_EPOCH or current <= fetching.validated:
            fetching.validated = max(fetching.validated, current)
            return True
        if key not in self._asked:
            self._asked[key] = asyncio.ensure_future(ask(key, fetching.epoch))
        return False

    def answers(self) -> Iterator[tuple[PartitionKey, int | None]]:
        """Each finished check: (partition, where the epoch ends now), None for the end when no leader answered
        (an epoch it does not know yet, a leader that moved again, a lost connection: asked again later)."""
        for key, check in list(self._asked.items()):
            if not check.done():
                continue
            del self._asked[key]
            try:
                error, end_offset = check.result()
            except KafkaOperationError:
                error, end_offset = -1, -1
            yield key, (None if error else end_offset)
