"""What the target must hold of a source partition, by the flow's own rules: its records as the flow's transforms and
provenance make them (`shared/reshape`, the one implementation data-mirror applies), as blocks for the alignment.

A partition the flow changes nothing of (`ChainEffect.NONE`) is compared as it is: its blocks pass through, and a
forwarded copy is still verified from its bytes. One whose records a Filter drops whole (`DROPS_ALL`) expects
nothing: its records are counted dropped, never decoded. Otherwise each batch's records go through the rules once,
as data-mirror's batch copier runs them: a batch none of whose records changed is compared as it is (its bytes
still tell a forwarded copy); of the others, the records kept are compared as the rules made them, each under its
source offset. A record not kept is expected absent: dropped by the transforms, or returned (its provenance names
the target). So a record lost, altered, repeated or foreign is found by offset, as on a flow without transforms.

A transform that fails on a record ends the expected records there (`ChainStopped`: what the target holds for it
cannot be told), unless the record lies past the range verified (read only to find where the range's copies end):
there the blocks just end.

On a flow with provenance whose remote topic has its source topic's name (IdentityReplicationPolicy), applications
write the remote topic too: only the records the flow may have copied (`Reshaper.copied`) are compared, the others
are counted as the target's own.

Pure: no I/O.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from shared.config import FlowConfig
from shared.kafka.record_digests import BatchBlock, record_digest
from shared.replication_policy import ReplicationPolicy
from shared.reshape.effect import ChainEffect
from shared.reshape.reshaper import Reshaper
from shared.verify.blocks import Block, EntryRun


def flow_reshaper(flow: FlowConfig, policy: ReplicationPolicy) -> Reshaper:
    """The rules `flow` copies by: its chain, and provenance headers as its settings say (named by `policy`)."""
    return Reshaper(
        flow.source, flow.target, flow.transforms, provenance=flow.settings.provenance_enabled, policy=policy
    )


@dataclass(frozen=True, slots=True)
class PartitionPair:
    """A source partition and its remote topic (`reshaper.Where`)."""

    source_topic: str
    remote_topic: str
    partition: int


class ChainStopped(Exception):
    """A transform failed on the source record at `offset`: what the target should hold from there is not known."""

    def __init__(self, offset: int, message: str) -> None:
        super().__init__(f"source offset {offset}: {message}")
        self.offset, self.message = offset, message


@dataclass
class _Tally:
    """What the rules count for a partition (`reshaper.Tally`); the verifier counts by offset instead."""

    work: PartitionPair
    dropped: int = 0
    returned: int = 0
    provenance_ignored: int = 0


class NotCopied:
    """Source records the flow does not copy, by reason; with `keep_offsets` their offsets are kept too, so that
    those below an offset are counted exactly (an audit range may end before the last record read)."""

    def __init__(self, *, keep_offsets: bool = False) -> None:
        self.dropped = 0
        self.returned = 0
        self._offsets: tuple[array[int], array[int]] | None = (array("q"), array("q")) if keep_offsets else None

    def add(self, dropped: Sequence[int], returned: Sequence[int]) -> None:
        """Offsets (increasing, after those added before) dropped by the transforms, and returned to the target."""
        self.dropped += len(dropped)
        self.returned += len(returned)
        if self._offsets is not None:
            self._offsets[0].extend(dropped)
            self._offsets[1].extend(returned)

    def below(self, offset: int) -> tuple[int, int]:
        """(dropped, returned) below source offset `offset` (all of them when no offsets are kept)."""
        if self._offsets is None:
            return self.dropped, self.returned
        return bisect_left(self._offsets[0], offset), bisect_left(self._offsets[1], offset)


class ExpectedSource:
    """One source partition as the flow's copy of it should read (`blocks`), the target's records the flow may have
    written (`target`), and what the flow leaves out (`not_copied`, `target_own`)."""

    def __init__(
        self, reshaper: Reshaper, pair: PartitionPair, *, range_end: int | None = None, keep_offsets: bool = False
    ) -> None:
        """`range_end`: records from there on are read only to find where the range's copies end."""
        self._reshaper = reshaper
        self._tally = _Tally(pair)
        self._range_end = range_end
        self.effect = reshaper.effect(pair)
        self.not_copied = NotCopied(keep_offsets=keep_offsets)
        self.target_own = 0  # target records the flow did not write (written there, or copied by another flow)
        self._sifted = reshaper.origin is not None and pair.remote_topic == pair.source_topic

    def blocks(self, source: Iterable[BatchBlock]) -> Iterator[Block]:
        """`source`'s blocks as the target should hold them, in order; ChainStopped where a transform fails."""
        if self.effect is ChainEffect.NONE:
            yield from source
            return
        for block in source:
            if self.effect is ChainEffect.DROPS_ALL:
                self.not_copied.add(block.offsets(), ())
                continue
            expected, failed_at, failure = self._reshaped(block)
            if expected is not None:
                yield expected
            if failed_at is not None:
                if self._range_end is not None and failed_at >= self._range_end:
                    return  # past the range: its copies end before it
                raise ChainStopped(failed_at, failure or "a transform failed")

    def _reshaped(self, block: BatchBlock) -> tuple[Block | None, int | None, str | None]:
        """The block as the rules leave it (None: every record left out), and where a transform failed on one."""
        records = block.records()
        offsets = [record.offset for record in records]
        chained = self._reshaper.batch(self._tally, records, offsets)
        failed_at = chained.failed_at
        reached = offsets if failed_at is None else offsets[: bisect_left(offsets, failed_at)]
        returned = chained.returned if failed_at is None else [o for o in chained.returned if o < failed_at]
        if chained.changed or failed_at is not None:
            placed = set(returned).union(chained.offsets)  # the rest of those reached were dropped
            self.not_copied.add([offset for offset in reached if offset not in placed], returned)
        if not chained.changed:
            return block, None, None
        kept = chained.records
        if not kept:
            return None, failed_at, chained.failure
        return EntryRun.of(chained.offsets, [record_digest(record) for record in kept]), failed_at, chained.failure

    def target(self, blocks: Iterable[BatchBlock]) -> Iterator[Block]:
        """The target's blocks; where applications write the remote topic too, only its records the flow may have
        copied (the others counted in `target_own`)."""
        if not self._sifted:
            yield from blocks
            return
        copied = self._reshaper.copied
        for block in blocks:
            records = block.records()
            mine = [record for record in records if copied(record.headers)]
            self.target_own += len(records) - len(mine)
            if len(mine) == len(records):
                yield block
            elif mine:
                yield EntryRun.of([record.offset for record in mine], [record_digest(record) for record in mine])
