"""What a copy task's loop asks of the part that moves records: the copier, record by record or batch by batch.

The task loop (`task_loop.TaskLoop`) owns positions, commits, progress, offset syncs and hand-over; a copier
only reads the source and writes the target for the partitions it is given, keeping each `PartitionCopy`'s
account of what was sent and acknowledged. The split is MirrorMaker 2's: its `MirrorSourceTask` copies, and
an offset-sync writer and the Connect framework's offset commits do the rest.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from services.data_mirror.partition_copy import PartitionCopy
from shared.partition_key import PartitionKey

FLUSH_TIMEOUT_S = 60


class TaskFailed(Exception):
    """The task cannot go on; the driver starts the slot again and it resumes from the committed progress."""


def describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


@dataclass(frozen=True, slots=True)
class FetchPosition:
    """Where the copier reads a partition next, as far as it knows (None: not known)."""

    next_offset: int | None
    leader_epoch: int | None = None  # of the fetch position: what a restart checks its position against
    end_offset: int | None = None  # the source's high watermark, last seen


ProgressFailed = Callable[[str], None]


class Copier(Protocol):
    """Moves the records of the task's partitions; every call comes from the task loop, one at a time."""

    @property
    def records(self) -> int:
        """Records taken from the source, for the task's result."""
        ...

    async def open(self) -> None:
        """Connect (the task's start-up has read its committed progress by now)."""

    def assign(self, parts: dict[PartitionKey, PartitionCopy]) -> None:
        """Copy `parts` from each one's `position` on (the loop keeps them; the copier updates their accounts)."""

    async def step(self) -> None:
        """One round: read what the source has, send it, take the target's answers. Returns within about 50 ms,
        so the loop can commit and look for a hand-over; reads the loop's clock (`Clock.now_ms`) when it wakes."""

    def hold(self, part: PartitionCopy) -> None:
        """Stop reading `part` (a refused record, a corrupt batch, a deleted topic) until `release`."""

    def release(self, part: PartitionCopy, offset: int) -> None:
        """Read `part` again from `offset` (a refused record's retry is due)."""

    def rewind(self, part: PartitionCopy, offset: int) -> None:
        """The source log of a held `part` diverged at `offset`, below what was read (an unclean leader election
        while it had no leader): copy again from there, and take the progress back with it, once what is in
        flight answered (so no answer moves it past `offset` again)."""

    def positions(self) -> dict[PartitionKey, FetchPosition]:
        """Where each partition is read next: past offsets without a record (transaction markers, compacted or
        aborted data), which the loop's commit may move a settled partition's position to."""

    async def settle(self, *, wait: bool) -> None:
        """Push what is queued; with `wait`, until the target answered every record and progress record sent
        (raises `TaskFailed` after FLUSH_TIMEOUT_S). Failures the answers carried are raised here."""

    def write_progress(self, key: bytes, value: bytes, on_failure: ProgressFailed) -> None:
        """Send one progress record to partition 0 of the progress topic, with the records' own producer (so an
        exactly-once flow's progress is in the records' transaction); `on_failure` gets the error if it fails."""

    def take_read_errors(self) -> int:
        """Source read errors since the last call (retried, but counted, so a struggling source shows)."""

    async def close(self) -> None:
        """Let go of the clients (after a hand-over, what was sent is answered already)."""


class Transactions(Protocol):
    """The exactly-once copier's producer transaction: records and their progress commit together."""

    def begin(self) -> None: ...

    async def commit(self) -> None:
        """Commit the open transaction, once every record and progress record sent in it was answered; a failure
        raises `TaskFailed` (the interval is copied again)."""

    async def abort(self) -> None:
        """Abort the open transaction: nothing sent in it counts (a failure raises `TaskFailed`)."""

    def abandon(self, timeout_s: float) -> None:
        """After a failure, with the task's event loop gone: end the open transaction if the client can (the next
        task of the slot fences this producer in any case, which aborts what it left open)."""
