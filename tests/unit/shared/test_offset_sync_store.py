"""OffsetSyncStore: MM2's OffsetSyncStoreTest vectors, its invariants, and Strait's exact translation."""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import pytest

from shared.errors import CodecError
from shared.offset_sync_store import RUNS_PER_PARTITION, SYNCS_PER_PARTITION, OffsetSyncStore
from shared.records.offset_sync import SYNC_SEGMENT_HEADER, OffsetSync, SyncSegment

TOPIC = "topic1"
PARTITION = 2
LONG_MAX = (1 << 63) - 1


def sync(store: OffsetSyncStore, upstream: int, downstream: int) -> None:
    """Feed one sync through the byte codec, as the offset-syncs consumer would."""
    record = OffsetSync(TOPIC, PARTITION, upstream, downstream)
    store.handle_record(record.record_key(), record.record_value())


def translate(store: OffsetSyncStore, upstream: int) -> int | None:
    return store.translate_downstream(TOPIC, PARTITION, upstream)


def started_store() -> OffsetSyncStore:
    store = OffsetSyncStore()
    store.mark_read_to_end()
    return store


def assert_sparse_sync(store: OffsetSyncStore, sync_offset: int, previous_offset: int) -> None:
    """Around a stored sync at `sync_offset` (up == down), the translation steps as MM2's test expects."""
    expected_before = -1 if previous_offset == -1 else previous_offset + 1
    assert translate(store, sync_offset - 1) == expected_before
    assert translate(store, sync_offset) == sync_offset
    assert translate(store, sync_offset + 1) == sync_offset + 1
    assert translate(store, sync_offset + 2) == sync_offset + 1


def _as_long(value: int) -> int:
    return ((value + (1 << 63)) % (1 << 64)) - (1 << 63)


def assert_sparse_sync_invariant(store: OffsetSyncStore) -> None:
    """Invariants B and C over every pair of stored syncs (Java long overflow skips a bound, as in MM2)."""
    ups = [store.sync_for(TOPIC, PARTITION, i).upstream_offset for i in range(SYNCS_PER_PARTITION)]
    for j in range(SYNCS_PER_PARTITION):
        j_up = ups[j]
        for i in range(j):
            i_up = ups[i]
            if i_up == j_up:
                continue
            exponent = max(i - 2, 0)
            lower = _as_long(j_up + (1 << exponent))
            if lower < 0:
                continue
            assert i_up >= lower, f"Invariant C({i},{j}): {i_up} at {i} should be >= {lower}"
            upper = _as_long(j_up + (1 << j) - (1 << i))
            if upper < 0:
                continue
            assert i_up <= upper, f"Invariant B({i},{j}): {i_up} at {i} should be <= {upper}"


def count_distinct_stored_syncs(store: OffsetSyncStore) -> int:
    count = 1
    for i in range(1, SYNCS_PER_PARTITION):
        if store.sync_for(TOPIC, PARTITION, i - 1) is not store.sync_for(TOPIC, PARTITION, i):
            count += 1
    return count


# --- MM2's OffsetSyncStoreTest ---------------------------------------------------------------


def test_offset_translation() -> None:
    store = started_store()
    # Downstream offset of a sync plus one, without dead-reckoning.
    sync(store, 100, 200)
    assert translate(store, 150) == 201
    # Exact offsets translate exactly.
    sync(store, 150, 251)
    assert translate(store, 150) == 251
    # Older than every sync: no translation possible.
    assert translate(store, 5) == -1
    # Downstream offsets reset.
    sync(store, 200, 10)
    assert translate(store, 200) == 10
    # Upstream offsets reset.
    sync(store, 20, 20)
    assert translate(store, 20) == 20


def test_no_translation_if_store_not_started() -> None:
    store = OffsetSyncStore()
    assert translate(store, 0) is None
    assert translate(store, 100) is None
    assert translate(store, 200) is None
    # A sync read during start-up is not used until the topic was read to its end.
    sync(store, 100, 200)
    assert not store.read_to_end
    assert translate(store, 0) is None
    assert translate(store, 100) is None
    assert translate(store, 200) is None
    assert store.translate_exact(TOPIC, PARTITION, 100) is None

    store.mark_read_to_end()
    assert store.read_to_end
    assert translate(store, 0) == -1
    assert translate(store, 100) == 200
    assert translate(store, 200) == 201


def test_no_translation_if_no_offset_sync() -> None:
    store = started_store()
    assert translate(store, 0) is None
    assert store.translate_exact(TOPIC, PARTITION, 0) is None
    sync(store, 0, 0)
    assert store.translate_downstream(TOPIC, PARTITION + 1, 0) is None
    assert store.translate_downstream("other", PARTITION, 0) is None
    assert store.partitions() == frozenset({(TOPIC, PARTITION)})


def test_past_offset_translation() -> None:
    max_offset_lag = 10
    store = OffsetSyncStore()
    for offset in range(0, 1001, max_offset_lag):
        sync(store, offset, offset)
        assert_sparse_sync_invariant(store)
    store.mark_read_to_end()

    # Only the last sync of the initial read is usable.
    assert_sparse_sync(store, 1000, -1)

    for offset in range(1000 + max_offset_lag, 10001, max_offset_lag):
        sync(store, offset, offset)
        assert_sparse_sync_invariant(store)

    # Invariant D: the last sync from the initial read is still stored and still the earliest usable.
    assert_sparse_sync(store, 1000, -1)
    # Older offsets are translated less precisely.
    assert_sparse_sync(store, 4840, 1000)
    assert_sparse_sync(store, 6760, 4840)
    assert_sparse_sync(store, 8680, 6760)
    assert_sparse_sync(store, 9160, 8680)
    assert_sparse_sync(store, 9640, 9160)
    assert_sparse_sync(store, 9880, 9640)
    assert_sparse_sync(store, 9940, 9880)
    assert_sparse_sync(store, 9970, 9940)
    assert_sparse_sync(store, 9990, 9970)
    assert_sparse_sync(store, 10000, 9990)

    # An upstream rewind clears every earlier sync.
    sync(store, 1500, 11000)
    assert_sparse_sync_invariant(store)
    assert translate(store, 1499) == -1
    assert translate(store, 1500) == 11000
    assert translate(store, 2000) == 11001


def test_past_offset_translation_without_initialization_read_to_end() -> None:
    max_offset_lag = 10
    store = OffsetSyncStore(initialization_must_read_to_end=False)
    for offset in range(0, 1001, max_offset_lag):
        sync(store, offset, offset)
        assert_sparse_sync_invariant(store)
    store.mark_read_to_end()

    # Syncs of the initial read are all usable.
    assert_sparse_sync(store, 480, 0)
    assert_sparse_sync(store, 720, 480)
    assert_sparse_sync(store, 1000, 990)

    for offset in range(1000, 10001, max_offset_lag):
        sync(store, offset, offset)
        assert_sparse_sync_invariant(store)

    # 1000 was expired; below 3840 only the sync at 0 remains.
    assert_sparse_sync(store, 3840, 0)
    assert_sparse_sync(store, 7680, 3840)
    assert_sparse_sync(store, 8640, 7680)
    assert_sparse_sync(store, 9120, 8640)
    assert_sparse_sync(store, 9600, 9120)
    assert_sparse_sync(store, 9840, 9600)
    assert_sparse_sync(store, 9900, 9840)
    assert_sparse_sync(store, 9960, 9900)
    assert_sparse_sync(store, 9990, 9960)
    assert_sparse_sync(store, 10000, 9990)

    sync(store, 1500, 11000)
    assert_sparse_sync_invariant(store)
    assert translate(store, 1499) == -1
    assert translate(store, 1500) == 11000
    assert translate(store, 2000) == 11001


def assert_bounded_expirations(first_offset: int, steps: Iterable[int], maximum_expirations: int) -> None:
    """Feed syncs at `first_offset` then by `steps`; each may expire at most `maximum_expirations` syncs."""
    store = started_store()
    sync(store, first_offset, first_offset)
    offset = first_offset
    last_count = 1
    for step in steps:
        offset += step
        assert offset <= LONG_MAX, "test is invalid: offset overflowed"
        sync(store, offset, offset)
        # Invariant A: the latest sync is present.
        assert store.sync_for(TOPIC, PARTITION, 0).upstream_offset == offset
        # Invariant D: the earliest sync is present.
        assert store.sync_for(TOPIC, PARTITION, SYNCS_PER_PARTITION - 1).upstream_offset == first_offset
        count = count_distinct_stored_syncs(store)
        expired = last_count - count + 1
        assert expired <= maximum_expirations, f"expired {expired} syncs after offset {offset}"
        last_count = count


def _doubling_steps(limit: int) -> Iterator[int]:
    step = 1
    while step < limit:
        yield step
        step = step * 2 + 1


@pytest.mark.parametrize("first_offset", [0, 7, 29])
def test_consistently_spaced_syncs_expire_at_most_one(first_offset: int) -> None:
    # MM2 runs every first offset below 30 with 100 syncs per step size; a sample keeps this fast.
    iterations = 100
    for step in _doubling_steps(LONG_MAX // iterations):
        assert_bounded_expirations(first_offset, [step] * iterations, 1)


def test_randomly_spaced_syncs_expire_boundedly() -> None:
    rng = random.Random(0)
    iterations = 256
    for n in range(1, 54, 4):
        maximum_difference = 1 << n
        # At most n bits between the largest and smallest step expire at most n + 2 syncs at once.
        steps = [rng.randrange(0, maximum_difference) for _ in range(iterations)]
        assert_bounded_expirations(0, steps, n + 2)
        offset_lag_max = 1 << 16
        steps = [rng.randrange(offset_lag_max, offset_lag_max + maximum_difference) for _ in range(iterations)]
        assert_bounded_expirations(0, steps, n + 2)


def test_dropped_syncs_spacing_expires_at_most_two() -> None:
    rng = random.Random(0)
    offset_lag_max = 100
    steps = [(2 if rng.random() < 0.5 else 1) * offset_lag_max for _ in range(3000)]
    assert_bounded_expirations(0, steps, 2)


def test_invariant_checker_detects_a_violation() -> None:
    # The checker must be able to fail: put the store in a state MM2 never produces.
    store = started_store()
    sync(store, 0, 0)
    sync(store, 1, 1)
    assert_sparse_sync_invariant(store)
    array = store._syncs[(TOPIC, PARTITION)]
    array[5] = array[0]  # [1, 0, 0, 0, 0, 1, 0, ...]: the newest sync among older ones breaks invariant C
    with pytest.raises(AssertionError, match="Invariant"):
        assert_sparse_sync_invariant(store)


def test_sync_for_errors() -> None:
    store = started_store()
    with pytest.raises(KeyError):
        store.sync_for(TOPIC, PARTITION, 0)
    sync(store, 1, 1)
    with pytest.raises(IndexError):
        store.sync_for(TOPIC, PARTITION, SYNCS_PER_PARTITION)


def test_handle_record_rejects_garbage() -> None:
    store = started_store()
    with pytest.raises(CodecError):
        store.handle_record(b"\x00\x06topic1", b"")
    assert store.partitions() == frozenset()


# --- translate_exact -------------------------------------------------------------------------


def exact(store: OffsetSyncStore, upstream: int) -> int | None:
    return store.translate_exact(TOPIC, PARTITION, upstream)


def test_exact_translation_between_contiguous_syncs() -> None:
    store = started_store()
    for i in range(101):
        sync(store, i * 100, i * 100 + 1000)
    assert count_distinct_stored_syncs(store) < 101  # the store really did thin the syncs out
    better = 0
    for upstream in range(10001):
        assert exact(store, upstream) == upstream + 1000
        mm2 = translate(store, upstream)
        assert mm2 is not None
        assert mm2 <= upstream + 1000
        better += mm2 < upstream + 1000
    assert better > 9000
    # Past the newest sync nothing is known: MM2's answer.
    assert exact(store, 10001) == translate(store, 10001) == 11001
    assert exact(store, 50000) == 11001


def test_exact_translation_matches_mm2_at_edges() -> None:
    store = started_store()
    sync(store, 100, 200)
    assert exact(store, 99) == -1
    assert exact(store, 100) == 200
    assert exact(store, 150) == 201  # a single sync gives no run to interpolate in
    sync(store, 200, 300)
    assert exact(store, 150) == 250
    assert exact(store, 250) == 301


def sync_every_ten(store: OffsetSyncStore, first: int, last: int, shift: int = 0) -> None:
    """Syncs (u, u + shift) for u from `first` to `last` by 10: one run, dense enough to stay stored."""
    for upstream in range(first, last + 1, 10):
        sync(store, upstream, upstream + shift)


def test_downstream_jump_falls_back() -> None:
    # Five transaction markers on the target after upstream 1000: the next syncs are 5 further downstream.
    store = started_store()
    sync_every_ten(store, 0, 1000)
    sync_every_ten(store, 1010, 1030, shift=5)
    # Stored in MM2's array now: ..., 960, 990 (old run), 1020, 1030 (new run); the old run ends at 1000.
    assert exact(store, 975) == 975
    assert exact(store, 995) == 995
    assert translate(store, 995) == 991
    assert exact(store, 1005) == translate(store, 1005) == 991  # between the runs: where the markers sit
    assert exact(store, 1025) == 1030


def test_duplicates_after_restart_fall_back() -> None:
    # Copied up to upstream 1050 (down 1050) with the last sync at 1000; a restart resumes at 1030,
    # copying 1030..1050 a second time from downstream 1051.
    store = started_store()
    sync_every_ten(store, 0, 1000)
    sync_every_ten(store, 1030, 1050, shift=21)
    # Stored now: ..., 960, 1000 (old run), 1030, 1040, 1050 (new lifetime).
    assert exact(store, 980) == 980
    assert exact(store, 1020) == translate(store, 1020) == 1001
    assert exact(store, 1045) == 1066


def test_upstream_gap_falls_back() -> None:
    # Upstream 1010..1059 compacted away: the record after the gap, 1060, lands at downstream 1010.
    store = started_store()
    sync_every_ten(store, 0, 1000)
    sync_every_ten(store, 1060, 1080, shift=-50)
    assert exact(store, 980) == 980
    # Extrapolating from 1000 would answer 1030, past the first record after the gap (1060 at 1010).
    assert exact(store, 1030) == translate(store, 1030) == 1001
    assert exact(store, 1075) == 1025


def test_equal_upstream_restart_starts_a_new_run() -> None:
    # A restart re-sends from the last synced upstream offset; that sync must not extend the old run.
    store = started_store()
    sync(store, 0, 0)
    sync(store, 100, 100)
    sync(store, 100, 300)
    sync(store, 200, 400)
    assert exact(store, 150) == 350
    assert exact(store, 50) == 50  # the first run still holds: nothing re-copied below 100
    assert translate(store, 50) == 1


def marked(
    store: OffsetSyncStore, upstream: int, downstream: int, writer: int, jumps: int, *, opens: bool = False
) -> None:
    """A sync as Strait's data mirror writes it: with its writer's segment in a header."""
    record = OffsetSync(TOPIC, PARTITION, upstream, downstream)
    header = (SYNC_SEGMENT_HEADER, SyncSegment(writer, jumps, opens=opens).encode())
    store.handle_record(record.record_key(), record.record_value(), [("other", b"x"), header])


def test_exact_answers_survive_a_restart_that_keeps_only_the_latest_sync_for_mm2() -> None:
    # A translator restarting reads every sync before it answers; MM2's array keeps only the latest.
    restarted = OffsetSyncStore()
    for upstream in range(0, 5001, 100):
        marked(restarted, upstream, upstream + 70, writer=7, jumps=1)
    restarted.mark_read_to_end()
    assert translate(restarted, 4999) == -1  # MM2: older than the one sync it kept
    assert translate(restarted, 5000) == 5070
    for upstream in (0, 1, 2345, 4999, 5000):
        assert exact(restarted, upstream) == upstream + 70
    assert exact(restarted, 5001) == translate(restarted, 5001) == 5071  # past the last sync: MM2's answer


def test_a_jump_whose_sync_was_lost_splits_the_run() -> None:
    # Writer 7 saw a jump after 100 (its sync was lost in delivery); an upstream gap and target markers
    # can cancel out, so the equal deltas around it prove nothing.
    store = started_store()
    marked(store, 0, 0, writer=7, jumps=1)
    marked(store, 100, 100, writer=7, jumps=1)
    marked(store, 300, 300, writer=7, jumps=2)
    marked(store, 400, 400, writer=7, jumps=2)
    assert exact(store, 50) == 50
    assert exact(store, 200) == translate(store, 200)
    assert exact(store, 350) == 350


def test_syncs_lost_inside_one_segment_cost_nothing() -> None:
    # Syncs 200 and 300 were left out (too many pending) or lost: no jump between, so the run still holds.
    store = started_store()
    marked(store, 100, 100, writer=7, jumps=1)
    marked(store, 400, 400, writer=7, jumps=1)
    assert exact(store, 250) == 250


def test_another_writer_or_an_unmarked_sync_starts_a_new_run() -> None:
    store = started_store()
    marked(store, 0, 0, writer=7, jumps=1)
    marked(store, 100, 100, writer=8, jumps=1)  # a new task life
    sync(store, 200, 200)  # MM2 writing again after a switch back
    marked(store, 300, 300, writer=8, jumps=1)
    for upstream in (50, 150, 250):
        assert exact(store, upstream) == translate(store, upstream)


def test_unmarked_syncs_keep_mm2_compatible_runs() -> None:
    # MM2 also syncs every upstream jump, so equal deltas between its consecutive syncs hold a run.
    store = started_store()
    sync(store, 0, 10)
    sync(store, 100, 110)
    assert exact(store, 50) == 60


def test_downstream_rewind_forgets_older_runs() -> None:
    # The target topic was recreated: offsets below the new sync no longer mean what the old run said.
    store = started_store()
    sync_every_ten(store, 0, 500)
    sync(store, 510, 0)
    sync(store, 520, 10)
    assert exact(store, 250) == translate(store, 250)
    assert exact(store, 515) == 5
    assert store.rewinds == 1  # checkpoint translates every group again after this


def test_syncs_that_only_advance_are_no_rewind() -> None:
    store = started_store()
    sync_every_ten(store, 0, 500)
    sync(store, 600, 650)  # a gap, not a rewind
    assert store.rewinds == 0


def test_only_the_newest_runs_are_kept() -> None:
    # Exactly-once: a transaction marker after every commit interval starts a new run each time.
    store = started_store()
    intervals = RUNS_PER_PARTITION + 10
    for interval in range(intervals):
        first = interval * 100
        sync(store, first, first + interval)
        sync(store, first + 99, first + 99 + interval)
    oldest_kept = intervals - RUNS_PER_PARTITION
    assert exact(store, oldest_kept * 100 + 50) == oldest_kept * 100 + 50 + oldest_kept
    forgotten = (oldest_kept - 1) * 100 + 50
    assert exact(store, forgotten) == translate(store, forgotten)


def test_runs_survive_rewind_clears() -> None:
    store = started_store()
    sync(store, 500, 500)
    sync(store, 100, 600)  # upstream rewind: the store clears, and a new run starts
    sync(store, 200, 700)
    assert exact(store, 150) == 650
    assert exact(store, 600) == translate(store, 600) == 701


@dataclass
class SimulatedMirror:
    """A data mirror for one partition: writes the downstream log and MM2's offset syncs."""

    offset_lag_max: int = 10
    missing: frozenset[int] = frozenset()  # upstream offsets that do not exist (compaction, markers)
    log: list[int | None] = field(default_factory=list)  # downstream offset -> upstream offset or marker
    syncs: list[OffsetSync] = field(default_factory=list)
    _prev_up: int = -1
    _prev_down: int = -1
    _last_sync_down: int = -1
    _delayed: OffsetSync | None = None

    def copy(self, upstream_offsets: Iterable[int]) -> None:
        for up in upstream_offsets:
            if up in self.missing:
                continue
            down = len(self.log)
            self.log.append(up)
            due = (
                self._last_sync_down == -1
                or down - (self._last_sync_down + 1) >= self.offset_lag_max
                or up - self._prev_up != 1
                or down < self._prev_down
            )
            offset_sync = OffsetSync(TOPIC, PARTITION, up, down)
            if due:
                self._last_sync_down = down
                self.syncs.append(offset_sync)
                self._delayed = None
            else:
                self._delayed = offset_sync
            self._prev_up, self._prev_down = up, down

    def marker(self) -> None:
        self.log.append(None)

    def commit(self) -> None:
        if self._delayed is not None:
            self.syncs.append(self._delayed)
            self._delayed = None

    def restart(self) -> None:
        self._prev_up = self._prev_down = self._last_sync_down = -1
        self._delayed = None

    def safe_bounds(self, max_upstream: int) -> list[int]:
        """For each U, the largest downstream offset that skips no upstream record >= U."""
        last_position: dict[int, int] = {}
        for down, up in enumerate(self.log):
            if up is not None:
                last_position[up] = down
        bounds = [len(self.log)] * (max_upstream + 2)
        for up in range(max_upstream, -1, -1):
            bounds[up] = min(bounds[up + 1], last_position.get(up, len(self.log)))
        return bounds

    def first_position(self, upstream: int) -> int | None:
        return self.log.index(upstream) if upstream in self.log else None


def assert_safe_and_no_worse(mirror: SimulatedMirror, store: OffsetSyncStore) -> int:
    """translate_exact never skips a record and never answers below MM2; returns how often it is better."""
    max_upstream = max(up for up in mirror.log if up is not None)
    bounds = mirror.safe_bounds(max_upstream)
    better = 0
    for upstream in range(max_upstream + 1):
        mm2 = translate(store, upstream)
        ours = exact(store, upstream)
        assert mm2 is not None
        assert ours is not None
        if mm2 == -1 and ours == -1:
            continue
        assert mm2 <= ours <= bounds[upstream], f"U={upstream}: mm2={mm2} exact={ours} bound={bounds[upstream]}"
        better += ours > mm2
    return better


def fed_store(mirror: SimulatedMirror, *, restarted: bool = False) -> OffsetSyncStore:
    """A store that read every sync live, or (`restarted`) as a restarted translator does, before answering."""
    store = OffsetSyncStore() if restarted else started_store()
    for offset_sync in mirror.syncs:
        sync(store, offset_sync.upstream_offset, offset_sync.downstream_offset)
    store.mark_read_to_end()
    return store


def test_simulated_contiguous_mirror_is_exact() -> None:
    mirror = SimulatedMirror()
    for start in range(0, 2000, 37):
        mirror.copy(range(start, min(start + 37, 2000)))
        mirror.commit()
    store = fed_store(mirror)
    assert len(mirror.syncs) > SYNCS_PER_PARTITION
    for upstream in range(2000):
        assert exact(store, upstream) == mirror.first_position(upstream)
    assert assert_safe_and_no_worse(mirror, store) > 1500
    restarted = fed_store(mirror, restarted=True)
    for upstream in range(2000):
        assert exact(restarted, upstream) == mirror.first_position(upstream)


def test_simulated_markers_restarts_and_gaps_stay_safe() -> None:
    mirror = SimulatedMirror(missing=frozenset(u for u in range(420, 700) if u % 7 == 0))
    mirror.copy(range(0, 300))
    mirror.marker()
    mirror.copy(range(300, 420))
    mirror.commit()
    mirror.marker()
    mirror.marker()
    mirror.copy(range(420, 700))
    mirror.copy(range(700, 760))
    mirror.restart()
    mirror.copy(range(740, 900))  # duplicates of 740..759
    mirror.commit()
    mirror.copy(range(900, 1200))
    assert assert_safe_and_no_worse(mirror, fed_store(mirror)) > 0
    assert assert_safe_and_no_worse(mirror, fed_store(mirror, restarted=True)) > 0


@pytest.mark.parametrize("seed", range(8))
def test_simulated_random_mirror_stays_safe(seed: int) -> None:
    rng = random.Random(seed)
    gap_chance = rng.choice([0.0, 0.05, 0.3])
    missing = frozenset(u for u in range(5000) if rng.random() < gap_chance)
    mirror = SimulatedMirror(offset_lag_max=rng.choice([1, 5, 10, 50]), missing=missing)
    upstream = 0
    for _ in range(60):
        action = rng.random()
        if action < 0.1:
            mirror.marker()
        elif action < 0.2:
            mirror.commit()
        elif action < 0.27:
            mirror.restart()
            upstream = max(0, upstream - rng.randrange(0, 30))
        else:
            length = rng.randrange(1, 80)
            mirror.copy(range(upstream, upstream + length))
            upstream += length
    assert_safe_and_no_worse(mirror, fed_store(mirror))
    assert_safe_and_no_worse(mirror, fed_store(mirror, restarted=True))


def test_an_offset_a_transform_dropped_translates_to_the_next_copied_record() -> None:
    """Records 100..104 were dropped (a Filter): the writer synced 99, the last of its run, and 105 where the
    next stretch opens. A group at 100..105 resumes at 105's copy (downstream 100): nothing skipped or repeated."""
    store = started_store()
    marked(store, 0, 0, writer=7, jumps=1, opens=True)
    marked(store, 99, 99, writer=7, jumps=1)
    marked(store, 105, 100, writer=7, jumps=2, opens=True)
    marked(store, 150, 145, writer=7, jumps=2)
    assert [exact(store, u) for u in (98, 99, 100, 102, 104, 105, 120)] == [98, 99, 100, 100, 100, 100, 115]
    assert store.is_exact(TOPIC, PARTITION, 102)
    assert translate(store, 102) == 100, "MM2's answer: after the sync at 99 (it would re-deliver nothing here)"


def test_records_copied_after_a_runs_last_sync_map_one_to_one_up_to_the_gap() -> None:
    """The sync closing the run (at 80) was lost; the run's last sync is at 50 and the next stretch opens at 85
    (81..84 dropped), downstream 81. 51..80 were copied one to one after 50, so they map exactly."""
    store = started_store()
    marked(store, 0, 0, writer=7, jumps=1, opens=True)
    marked(store, 50, 50, writer=7, jumps=1)
    marked(store, 85, 81, writer=7, jumps=2, opens=True)
    assert [exact(store, u) for u in (60, 80, 81, 84, 85)] == [60, 80, 81, 81, 81]


@pytest.mark.parametrize(
    ("writer", "jumps", "opens"),
    [(8, 2, True), (7, 3, True), (7, 2, False)],
    ids=["another-writer", "a-jump-between", "not-the-opening-sync"],
)
def test_a_gap_is_crossed_only_when_the_next_sync_is_the_one_written_at_the_jump(
    writer: int, jumps: int, opens: bool
) -> None:
    store = started_store()
    marked(store, 0, 0, writer=7, jumps=1, opens=True)
    marked(store, 50, 50, writer=7, jumps=1)
    marked(store, 85, 81, writer=writer, jumps=jumps, opens=opens)
    assert exact(store, 60) == translate(store, 60) == 51, "MM2's answer: re-delivers from 51, skips nothing"
    assert not store.is_exact(TOPIC, PARTITION, 60)


def test_a_segment_that_opens_its_stretch_adds_one_byte_and_still_equals_its_stretch() -> None:
    opening = SyncSegment(7, 2, opens=True)
    assert opening.encode() == SyncSegment(7, 2).encode() + b"\x01"
    assert SyncSegment.decode(opening.encode()).opens
    assert not SyncSegment.decode(SyncSegment(7, 2).encode()).opens
    assert opening == SyncSegment(7, 2), "one stretch, whichever sync opened it"
    with pytest.raises(CodecError):
        SyncSegment.decode(SyncSegment(7, 2).encode() + b"\x02")


def _filtered_stretch(store: OffsetSyncStore, runs: int, *, first_run: int = 0) -> None:
    """`runs` runs as a data mirror with a Filter writes them: 24 records copied, one dropped, and so on."""
    for run in range(first_run, first_run + runs):
        marked(store, run * 25, run * 24, writer=7, jumps=run + 1, opens=True)
        marked(store, run * 25 + 23, run * 24 + 23, writer=7, jumps=run + 1)


def test_an_offset_asked_before_its_syncs_came_stays_exact_however_many_runs_arrive_after_it() -> None:
    """A group paused at 2,510 while the mirror was still behind: its checkpoint asks before the syncs exist (not
    exact yet). The mirror then catches up, and the syncs of far more runs than a partition keeps arrive before
    the next round asks again; the run holding 2,510 is kept for that question, and the newest runs as always."""
    store = started_store()
    _filtered_stretch(store, 10)
    paused_at = 2_510  # run 100, record 10: downstream 100 * 24 + 10
    assert not store.is_exact(TOPIC, PARTITION, paused_at)
    _filtered_stretch(store, 10 * RUNS_PER_PARTITION, first_run=10)
    assert store.is_exact(TOPIC, PARTITION, paused_at)
    assert exact(store, paused_at) == 2_410
    newest = (10 + 10 * RUNS_PER_PARTITION - 1) * 25 + 5
    assert store.is_exact(TOPIC, PARTITION, newest)
    never_asked = 3_010
    assert not store.is_exact(TOPIC, PARTITION, never_asked), "runs no one asked about are forgotten as before"


def test_an_offset_asked_in_a_gap_keeps_the_runs_on_both_sides_of_it() -> None:
    """2,524 is a dropped record (the gap after run 100): it translates to the copy of the next kept record, 2,525,
    which needs run 100 and run 101; both outlive the newest runs."""
    store = started_store()
    _filtered_stretch(store, 10)
    assert not store.is_exact(TOPIC, PARTITION, 2_524)
    _filtered_stretch(store, 10 * RUNS_PER_PARTITION, first_run=10)
    assert store.is_exact(TOPIC, PARTITION, 2_524)
    assert exact(store, 2_524) == 101 * 24
