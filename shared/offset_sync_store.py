"""Offset translation index built from offset syncs: MM2 3.5+ OffsetSyncStore semantics, plus exact runs."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from shared.partition_key import PartitionKey
from shared.records.offset_sync import OffsetSync, SyncSegment

SYNCS_PER_PARTITION = 64
RUNS_PER_PARTITION = 64
WANTED_PER_PARTITION = 64  # offsets asked about but not yet exact, whose runs outlive RUNS_PER_PARTITION
_TRIM_SLACK = 32  # runs past the cap before a partition with wanted offsets is trimmed

_LONG_MIN = -(1 << 63)
_LONG_MAX = (1 << 63) - 1
_POWERS = tuple(1 << k for k in range(SYNCS_PER_PARTITION))
_C_STEPS = tuple(1 << max(i - 2, 0) for i in range(SYNCS_PER_PARTITION))


def _as_long(value: int) -> int:
    """`value` wrapped to a signed 64-bit integer, as Java's long arithmetic would leave it."""
    if _LONG_MIN <= value <= _LONG_MAX:
        return value
    return ((value - _LONG_MIN) % (1 << 64)) + _LONG_MIN


@dataclass(frozen=True, eq=False, slots=True)
class _StoredSync:
    """A received sync and its writer's segment; compared by identity, like MM2's sync objects."""

    sync: OffsetSync
    segment: SyncSegment | None
    upstream: int
    downstream: int


@dataclass(slots=True)
class _Run:
    """Upstream offsets first..last map to `offset + shift` downstream, one to one, with nothing between;
    `segment`: the writer's segment of its syncs (None: a writer that does not mark them, as MM2)."""

    first: int
    last: int
    shift: int
    segment: SyncSegment | None = None
    cut_after: bool = False  # the run after it was trimmed away: what follows in the list is not its successor


def _continues(previous: _StoredSync, new: _StoredSync) -> bool:
    """`new` extends `previous`'s run: both offsets advanced by the same positive amount, and (when the
    writer marks its syncs, as Strait's does) both lie in one segment of that writer: no jump between them."""
    upstream_step = new.upstream - previous.upstream
    if upstream_step <= 0 or upstream_step != new.downstream - previous.downstream:
        return False
    return new.segment == previous.segment


def _trimmed(runs: list[_Run], wanted: dict[int, None]) -> list[_Run]:
    """The newest RUNS_PER_PARTITION runs, and the older ones a wanted offset needs: its own run, and the next
    one too for an offset in the gap after a run (at most two per wanted offset). A kept run whose successor goes
    is marked, so no gap answer joins it to the next kept one."""
    keep = set(range(len(runs) - RUNS_PER_PARTITION, len(runs)))
    for offset in wanted:
        index = bisect_right(runs, offset, key=lambda run: run.first) - 1
        if index >= 0:
            keep.add(index)
            if offset > runs[index].last and index + 1 < len(runs):
                keep.add(index + 1)
    kept = sorted(keep)
    for index in kept:
        if index + 1 < len(runs) and index + 1 not in keep:
            runs[index].cut_after = True
    return [runs[index] for index in kept]


def _opened_after(run: _Run, following: _Run) -> bool:
    """True when `following` starts with the sync its writer wrote at the one jump after `run`'s syncs."""
    before, after = run.segment, following.segment
    return (
        before is not None
        and after is not None
        and after.opens
        and after.writer == before.writer
        and after.jumps == before.jumps + 1
        and following.first > run.last
        and following.first + following.shift > run.last + run.shift
    )


def _invariant_b(i_sync: _StoredSync, j_sync: _StoredSync, i: int, j: int) -> bool:
    """syncs[i] is recent enough relative to syncs[j]: i.up <= j.up + 2^j - 2^i (bound overflow passes)."""
    if i_sync is j_sync:
        return True
    bound = _as_long(j_sync.upstream + _POWERS[j] - _POWERS[i])
    return bound < 0 or i_sync.upstream <= bound


def _invariant_c(i_sync: _StoredSync, j_sync: _StoredSync, i: int) -> bool:
    """syncs[i] is far enough from the older syncs[j]: i.up >= j.up + 2^max(i-2, 0)."""
    if i_sync is j_sync:
        return True
    bound = _as_long(j_sync.upstream + _C_STEPS[i])
    return bound >= 0 and i_sync.upstream >= bound


class OffsetSyncStore:
    """Keeps up to 64 offset syncs per source topic-partition and translates upstream offsets.

    Invariants per partition, over the array `syncs` (index 0 newest), exactly as MM2 3.5+:

    - A: syncs[0] is the latest sync received.
    - B: for i < j with syncs[i] is not syncs[j]: syncs[i].up <= syncs[j].up + 2^j - 2^i.
    - C: for i < j with syncs[i] is not syncs[j]: syncs[i].up >= syncs[j].up + 2^max(i-2, 0).
    - D: syncs[63] is the earliest sync usable for translation.

    So distinct syncs are spaced roughly exponentially: precise near the live end, coarse further back.
    Until `mark_read_to_end()`, nothing is translated, and (when `initialization_must_read_to_end`)
    each sync replaces the whole array, so a sync that an earlier generation might have used is never
    trusted. An upstream rewind also clears the partition.

    Strait's addition, `translate_exact`, rests on *runs*, kept apart from the array. A received sync
    continues the previous sync's run when both offsets advanced by the same positive amount and, for
    syncs that carry a `SyncSegment` (Strait's), when both carry the same one; otherwise it starts a new
    run. A data mirror writes a sync at every upstream offset jump, every downstream jump and every restart,
    so between two syncs of one run no record was skipped or duplicated and every offset between them maps
    exactly. Deltas that disagree mean gaps, duplicates or downstream transaction markers; different
    segments mean a jump whose sync may have been lost. There the store answers as MM2 does, which may
    re-deliver but never skips.

    Runs are built from every sync read, the initial read included: a compacted offset-syncs topic keeps,
    per key, only a suffix of the syncs written (the last one before the cleaned point and all after), so
    consecutive syncs read were consecutive as written. That is why exact answers survive a restart while
    the array, by MM2's rule, starts again from the latest sync. The newest `RUNS_PER_PARTITION` runs are
    kept, and the runs that answer an offset `is_exact` was asked about before its syncs came (a group that
    paused while the mirror was behind: when the mirror catches up, far more runs than are kept may arrive
    before the next round asks again); while a partition has such offsets it is trimmed in batches of
    `_TRIM_SLACK` runs. A rewind of either offset (a re-copy, a recreated topic) forgets the older ones.
    """

    def __init__(self, *, initialization_must_read_to_end: bool = True) -> None:
        self._initialization_must_read_to_end = initialization_must_read_to_end
        self._read_to_end = False
        self._syncs: dict[PartitionKey, list[_StoredSync]] = {}
        self._last_received: dict[PartitionKey, _StoredSync] = {}
        self._runs: dict[PartitionKey, list[_Run]] = {}
        self._wanted: dict[PartitionKey, dict[int, None]] = {}  # oldest first
        self._trim_at: dict[PartitionKey, int] = {}  # run count that triggers the next trim (wanted offsets)
        self.rewinds = 0  # syncs that went back in either offset: earlier exact answers may no longer hold

    @property
    def read_to_end(self) -> bool:
        """True once the offset-syncs topic has been read to its end at least once."""
        return self._read_to_end

    def mark_read_to_end(self) -> None:
        """Record that the initial read of the offset-syncs topic reached its end; translation starts."""
        self._read_to_end = True

    def partitions(self) -> frozenset[PartitionKey]:
        """The (topic, partition) pairs that have at least one sync."""
        return frozenset(self._syncs)

    def handle_record(self, key: bytes, value: bytes, headers: Sequence[tuple[str, bytes | None]] = ()) -> None:
        """Decode an offset-syncs record and apply it; raises CodecError for bytes that do not decode."""
        self.handle(OffsetSync.decode(key, value), SyncSegment.from_headers(headers))

    def handle(self, sync: OffsetSync, segment: SyncSegment | None = None) -> None:
        """Apply one sync, in the order read from the offset-syncs topic."""
        tp = (sync.topic, sync.partition)
        entry = _StoredSync(sync, segment, sync.upstream_offset, sync.downstream_offset)
        self._extend_runs(tp, self._last_received.get(tp), entry)
        self._last_received[tp] = entry
        current = self._syncs.get(tp)
        if current is None:
            self._syncs[tp] = [entry] * SYNCS_PER_PARTITION
            return
        # Build a new array rather than mutating, so a reader holding the old one sees a consistent state.
        updated = list(current)
        self._update_sync_array(updated, current, entry)
        self._syncs[tp] = updated

    def _extend_runs(self, tp: PartitionKey, previous: _StoredSync | None, new: _StoredSync) -> None:
        runs = self._runs.setdefault(tp, [])
        if previous is not None and _continues(previous, new):
            runs[-1].last = new.upstream
            return
        if previous is not None and (new.upstream < previous.upstream or new.downstream < previous.downstream):
            runs.clear()  # a rewind: what older runs say about these offsets may no longer hold
            self.rewinds += 1
        runs.append(_Run(new.upstream, new.upstream, new.downstream - new.upstream, new.segment))
        wanted = self._wanted.get(tp)
        if not wanted:
            del runs[: max(0, len(runs) - RUNS_PER_PARTITION)]
            self._trim_at.pop(tp, None)
        elif len(runs) > self._trim_at.get(tp, RUNS_PER_PARTITION + _TRIM_SLACK):
            runs[:] = _trimmed(runs, wanted)  # in batches: finding the runs the wanted offsets need costs
            self._trim_at[tp] = len(runs) + _TRIM_SLACK

    def _update_sync_array(self, syncs: list[_StoredSync], original: list[_StoredSync], new: _StoredSync) -> None:
        """MM2's update: repair invariant A, then B index by index, reusing old syncs to keep the most."""
        only_load_last = not self._read_to_end and self._initialization_must_read_to_end
        upstream_rewind = new.upstream < syncs[0].upstream
        if only_load_last or upstream_rewind:
            syncs[:] = [new] * SYNCS_PER_PARTITION
            return
        replacement = new
        replacement_index = 0
        syncs[0] = replacement
        for current in range(1, SYNCS_PER_PARTITION):
            previous = current - 1
            # Prefer promoting an older sync into this slot over duplicating `replacement`: more distinct
            # syncs stay stored, which keeps translation precise.
            while True:
                old = original[replacement_index]
                is_recent = _invariant_b(syncs[previous], old, previous, current)
                separated_from_previous = _invariant_c(syncs[previous], old, previous)
                following = current + 1
                separated_from_next = following >= SYNCS_PER_PARTITION or _invariant_c(old, syncs[following], current)
                next_replacement = replacement_index + 1
                duplicate = next_replacement < SYNCS_PER_PARTITION and old is original[next_replacement]
                promote = is_recent and separated_from_previous and separated_from_next
                if promote:
                    replacement = old
                # Skip candidates that can never be used at this or a later slot.
                skip = duplicate or not separated_from_previous
                if promote or skip:
                    replacement_index += 1
                if not (replacement_index < current and skip):
                    break
            if _invariant_b(syncs[previous], syncs[current], previous, current):
                # B holds here, so it holds for the whole older tail: keep it.
                break
            syncs[current] = replacement

    def _latest_index(self, syncs: list[_StoredSync], upstream_offset: int) -> int:
        """Index of the newest sync with up <= upstream_offset, or the last index if there is none."""
        for index, stored in enumerate(syncs):
            if stored.upstream <= upstream_offset:
                return index
        return SYNCS_PER_PARTITION - 1

    def translate_downstream(self, topic: str, partition: int, upstream_offset: int) -> int | None:
        """MM2's translation of an upstream consumer offset to the downstream topic.

        None: not read to end yet, or no sync for the partition. -1: older than every stored sync.
        Otherwise `sync.down` when `upstream_offset` equals the sync's upstream offset, else `sync.down + 1`.
        """
        if not self._read_to_end:
            return None
        syncs = self._syncs.get((topic, partition))
        if syncs is None:
            return None
        stored = syncs[self._latest_index(syncs, upstream_offset)]
        if stored.upstream > upstream_offset:
            return -1
        step = 0 if stored.upstream == upstream_offset else 1
        return stored.downstream + step

    def translate_exact(self, topic: str, partition: int, upstream_offset: int) -> int | None:
        """Like `translate_downstream`, but exact inside a run, and across the jump to the writer's next run.

        For U between the first and last sync of a kept run the answer is U + (down - up) of that run. For U
        between a run and the next one, when the next run's first sync is the one its writer wrote at the jump
        that ended the run (same writer, one jump more, marked as opening its stretch): the records after the
        run's last sync were copied one to one up to the next run's first downstream offset, and the upstream
        offsets after them were not copied (dropped by a transform, compacted away), so U maps into the first
        part, or to the next run's first record. In every other case (beyond the newest sync, between runs of
        different writers or with a sync lost between them, not read to end, no sync) it is
        `translate_downstream`'s answer, which may re-deliver but never skips.
        """
        if not self._read_to_end:
            return None
        exact = self._exact(topic, partition, upstream_offset)
        return exact if exact is not None else self.translate_downstream(topic, partition, upstream_offset)

    def is_exact(self, topic: str, partition: int, upstream_offset: int) -> bool:
        """True if `translate_exact` answers exactly for this offset, so later syncs cannot improve the answer.

        Not read-only: an offset that is not exact yet is remembered (the newest `WANTED_PER_PARTITION` per
        partition), so the runs that will answer it are kept until it is asked again."""
        exact = self._read_to_end and self._exact(topic, partition, upstream_offset) is not None
        wanted = self._wanted.get((topic, partition))
        if exact:
            if wanted:
                wanted.pop(upstream_offset, None)
            return True
        if wanted is None:
            wanted = self._wanted[(topic, partition)] = {}
        wanted.pop(upstream_offset, None)
        wanted[upstream_offset] = None  # the newest last
        if len(wanted) > WANTED_PER_PARTITION:
            del wanted[next(iter(wanted))]
        return False

    def _exact(self, topic: str, partition: int, upstream_offset: int) -> int | None:
        runs = self._runs.get((topic, partition))
        if not runs:
            return None
        index = bisect_right(runs, upstream_offset, key=lambda run: run.first) - 1
        if index < 0:
            return None
        run = runs[index]
        if upstream_offset <= run.last:
            return upstream_offset + run.shift
        following = runs[index + 1] if index + 1 < len(runs) else None
        if following is None or run.cut_after or not _opened_after(run, following):
            return None
        copied_after = (following.first + following.shift) - (run.last + run.shift) - 1  # downstream, before it
        if upstream_offset - run.last <= copied_after:
            return upstream_offset + run.shift
        return following.first + following.shift

    def translate_upstream(self, topic: str, partition: int, downstream_offset: int) -> int | None:
        """The other way (Strait's, for failing back): where a reader at `downstream_offset` on the target resumes on
        the source. Exact inside a kept run; otherwise from the newest stored sync at or before it: its upstream
        offset when `downstream_offset` is that sync's copy, one past it when it lies further (the records between
        are read again, none is skipped). None: not read to end, or no sync at or before it."""
        if not self._read_to_end:
            return None
        for run in reversed(self._runs.get((topic, partition), ())):
            if run.first + run.shift <= downstream_offset <= run.last + run.shift:
                return downstream_offset - run.shift
        syncs = self._syncs.get((topic, partition))
        if syncs is None:
            return None
        stored = next((entry for entry in syncs if entry.downstream <= downstream_offset), None)
        if stored is None:
            return None
        return stored.upstream + (0 if stored.downstream == downstream_offset else 1)

    def sync_for(self, topic: str, partition: int, index: int) -> OffsetSync:
        """The sync stored at `index` (0 newest, 63 oldest) for a partition; for tests and diagnostics."""
        syncs = self._syncs.get((topic, partition))
        if syncs is None:
            raise KeyError(f"no syncs present for {topic}-{partition}")
        if not 0 <= index < SYNCS_PER_PARTITION:
            raise IndexError(f"sync index {index} out of range 0..{SYNCS_PER_PARTITION - 1}")
        return syncs[index].sync
