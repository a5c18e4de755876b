"""Offset translation index built from offset syncs: MM2 3.5+ OffsetSyncStore semantics, plus exact runs."""

from __future__ import annotations

from dataclasses import dataclass

from shared.records.offset_sync import OffsetSync

SYNCS_PER_PARTITION = 64

_LONG_MIN = -(1 << 63)
_LONG_MAX = (1 << 63) - 1
_POWERS = tuple(1 << k for k in range(SYNCS_PER_PARTITION))
_C_STEPS = tuple(1 << max(i - 2, 0) for i in range(SYNCS_PER_PARTITION))

TopicPartition = tuple[str, int]


def _as_long(value: int) -> int:
    """`value` wrapped to a signed 64-bit integer, as Java's long arithmetic would leave it."""
    if _LONG_MIN <= value <= _LONG_MAX:
        return value
    return ((value - _LONG_MIN) % (1 << 64)) + _LONG_MIN


@dataclass(frozen=True, eq=False, slots=True)
class _StoredSync:
    """A received sync and the run it belongs to; compared by identity, like MM2's sync objects."""

    sync: OffsetSync
    run_id: int
    upstream: int
    downstream: int


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

    Strait's addition, `translate_exact`, rests on one more invariant. Every received sync belongs to a
    *run*: a sync continues the previous sync's run (regardless of clears) when both offsets advanced
    by the same positive amount, otherwise it starts a new run. Within a run downstream - upstream is
    constant. A data mirror writes a sync at every upstream offset jump and at every restart, so between
    two syncs of one run no record was skipped or duplicated and an offset between them maps exactly.
    Deltas that disagree mean gaps, duplicates or downstream transaction markers; there the store falls
    back to MM2's answer, which may re-deliver but never skips.
    """

    def __init__(self, *, initialization_must_read_to_end: bool = True) -> None:
        self._initialization_must_read_to_end = initialization_must_read_to_end
        self._read_to_end = False
        self._syncs: dict[TopicPartition, list[_StoredSync]] = {}
        self._last_received: dict[TopicPartition, _StoredSync] = {}
        self._next_run_id = 0

    @property
    def read_to_end(self) -> bool:
        """True once the offset-syncs topic has been read to its end at least once."""
        return self._read_to_end

    def mark_read_to_end(self) -> None:
        """Record that the initial read of the offset-syncs topic reached its end; translation starts."""
        self._read_to_end = True

    def partitions(self) -> frozenset[TopicPartition]:
        """The (topic, partition) pairs that have at least one sync."""
        return frozenset(self._syncs)

    def handle_record(self, key: bytes, value: bytes) -> None:
        """Decode an offset-syncs record and apply it; raises CodecError for bytes that do not decode."""
        self.handle(OffsetSync.decode(key, value))

    def handle(self, sync: OffsetSync) -> None:
        """Apply one sync, in the order read from the offset-syncs topic."""
        tp = (sync.topic, sync.partition)
        entry = self._with_run(tp, sync)
        self._last_received[tp] = entry
        current = self._syncs.get(tp)
        if current is None:
            self._syncs[tp] = [entry] * SYNCS_PER_PARTITION
            return
        # Build a new array rather than mutating, so a reader holding the old one sees a consistent state.
        updated = list(current)
        self._update_sync_array(updated, current, entry)
        self._syncs[tp] = updated

    def _with_run(self, tp: TopicPartition, sync: OffsetSync) -> _StoredSync:
        previous = self._last_received.get(tp)
        if previous is not None:
            upstream_step = sync.upstream_offset - previous.upstream
            downstream_step = sync.downstream_offset - previous.downstream
            if upstream_step > 0 and upstream_step == downstream_step:
                return _StoredSync(sync, previous.run_id, sync.upstream_offset, sync.downstream_offset)
        self._next_run_id += 1
        return _StoredSync(sync, self._next_run_id, sync.upstream_offset, sync.downstream_offset)

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
        """Like `translate_downstream`, but exact between two stored syncs of one run.

        For U between the newest stored sync s with s.up <= U and the next newer stored sync n, if s and n
        belong to the same run the answer is s.down + (U - s.up); in every other case (different runs, U at
        or beyond the newest sync, not read to end, no sync) it is `translate_downstream`'s answer.
        """
        if not self._read_to_end:
            return None
        syncs = self._syncs.get((topic, partition))
        if syncs is None:
            return None
        index = self._latest_index(syncs, upstream_offset)
        stored = syncs[index]
        if stored.upstream > upstream_offset:
            return -1
        if stored.upstream == upstream_offset:
            return stored.downstream
        if index > 0 and syncs[index - 1].run_id == stored.run_id:
            return stored.downstream + (upstream_offset - stored.upstream)
        return stored.downstream + 1

    def sync_for(self, topic: str, partition: int, index: int) -> OffsetSync:
        """The sync stored at `index` (0 newest, 63 oldest) for a partition; for tests and diagnostics."""
        syncs = self._syncs.get((topic, partition))
        if syncs is None:
            raise KeyError(f"no syncs present for {topic}-{partition}")
        if not 0 <= index < SYNCS_PER_PARTITION:
            raise IndexError(f"sync index {index} out of range 0..{SYNCS_PER_PARTITION - 1}")
        return syncs[index].sync
