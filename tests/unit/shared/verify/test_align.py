"""The record-by-record alignment of a source partition with its remote copy: each finding counted and placed.

Every test runs with the entries in blocks of several sizes (one entry per block is the record-by-record reading):
the findings do not depend on how the records were batched.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Iterable
from typing import Any

import pytest

from shared.verify import align as aligning
from shared.verify.align import Alignment, Anchor, Frame, RangeAlignment
from shared.verify.blocks import Entry, blocks_of
from shared.verify.findings import AlteredRecord, OffsetRange
from shared.verify.sync_index import PartitionLocator

_sizes = (1, 1)  # entries per block on the source and on the target, set per test by `block_sizes`


@pytest.fixture(autouse=True, params=[(1, 1), (3, 5), (7, 2), (1_000, 1_000)], ids=lambda sizes: f"blocks{sizes}")
def block_sizes(request: pytest.FixtureRequest) -> None:
    global _sizes
    _sizes = request.param


def align(source: Iterable[Entry], target: Iterable[Entry], frame: Frame, **options: Any) -> Alignment:
    return aligning.align(blocks_of(source, _sizes[0]), blocks_of(target, _sizes[1]), frame, **options)


def align_range(source: Iterable[Entry], target: Iterable[Entry], frame: Frame, **options: Any) -> RangeAlignment:
    return aligning.align_range(blocks_of(source, _sizes[0]), blocks_of(target, _sizes[1]), frame, **options)


def source(first: int, end: int) -> list[Entry]:
    """Source records first..end-1, each with its own digest (the offset's)."""
    return [Entry(offset, 1000 + offset) for offset in range(first, end)]


def copied(records: list[Entry], first_target_offset: int = 0) -> list[Entry]:
    """`records` as a replica holds them, from `first_target_offset` on."""
    return [Entry(first_target_offset + i, entry.digest) for i, entry in enumerate(records)]


def frame(log_start: int = 0, end: int = 100, copied_to: int | None = 100) -> Frame:
    return Frame(log_start=log_start, source_from=log_start, source_to=end, copied_to=copied_to)


def test_a_clean_copy_verifies_every_record() -> None:
    result = align(source(0, 100), copied(source(0, 100)), frame())
    assert (result.verified, result.missing.records, result.altered_records, result.duplicates) == (100, 0, 0, 0)
    assert (result.unexpected, result.not_yet_copied, result.source_gone) == (0, 0, 0)


def test_records_deleted_from_the_start_of_the_target_are_missing_with_their_offsets() -> None:
    result = align(source(0, 100), copied(source(0, 100))[10:], frame())
    assert result.verified == 90
    assert result.missing.finish() == [OffsetRange(0, 9, 10)]


def test_a_hole_in_the_middle_is_one_missing_range() -> None:
    records = source(0, 100)
    result = align(records, copied(records[:30] + records[40:]), frame())
    assert result.verified == 90
    assert result.missing.finish() == [OffsetRange(30, 39, 10)]


def test_a_changed_record_is_altered_and_named_by_both_offsets() -> None:
    target = copied(source(0, 100))
    target[50] = Entry(50, 7)
    result = align(source(0, 100), target, frame())
    assert (result.verified, result.altered_records, result.missing.records) == (99, 1, 0)
    assert result.altered == [AlteredRecord(50, 50)]


def test_a_changed_last_record_is_altered_once_the_mirror_is_past_it() -> None:
    target = copied(source(0, 100))
    target[99] = Entry(99, 7)
    result = align(source(0, 100), target, frame())
    assert result.altered == [AlteredRecord(99, 99)]
    assert result.missing.records == 0


def test_a_replay_counts_duplicates_and_loses_nothing() -> None:
    records = source(0, 100)
    result = align(records, copied(records[:60] + records[40:]), frame())
    assert (result.verified, result.duplicates, result.missing.records, result.unexpected) == (100, 20, 0, 0)


def test_a_record_from_nowhere_is_unexpected() -> None:
    records = copied(source(0, 100))
    target = copied([*records[:20], Entry(0, 5), *records[20:]])
    result = align(source(0, 100), target, frame())
    assert (result.verified, result.unexpected, result.missing.records, result.altered_records) == (100, 1, 0, 0)


def test_the_tail_beyond_the_mirrors_position_is_not_yet_copied_and_before_it_missing() -> None:
    records = source(0, 100)
    waiting = align(records, copied(records[:80]), frame(copied_to=80))
    assert (waiting.not_yet_copied, waiting.missing.records) == (20, 0)
    short = align(records, copied(records[:80]), frame(copied_to=90))
    assert (short.not_yet_copied, short.missing.finish()) == (10, [OffsetRange(80, 89, 10)])
    unknown = align(records, copied(records[:80]), frame(copied_to=None))
    assert (unknown.not_yet_copied, unknown.missing.records) == (20, 0)


def test_a_range_that_expired_before_it_was_copied_is_placed_by_the_offset_syncs() -> None:
    """0..9 copied, 10..49 deleted on the source before the mirror got there, 50..99 copied after: the source now
    starts at 50, the target holds 0..9 (their sources gone) then 50..99."""
    syncs: dict[int, Anchor] = {0: (0, 0), 10: (50, 10)}

    def locate(target_offset: int) -> Anchor | None:
        return syncs[max(d for d in syncs if d <= target_offset)]

    gone = [Entry(offset, 1000 + offset) for offset in range(10)]
    result = align(source(50, 100), copied(gone + source(50, 100)), frame(log_start=50), locate=locate)
    assert (result.verified, result.source_gone, result.missing.records) == (50, 10, 0)
    assert result.expired.finish() == [OffsetRange(10, 49, 40)]


def test_a_target_emptied_far_beyond_the_window_is_found_through_the_syncs() -> None:
    records = source(0, 1000)

    def locate(_target_offset: int) -> Anchor:
        return (0, 0)

    result = align(records, copied(records, 0)[900:], frame(end=1000, copied_to=1000), locate=locate, window=10)
    assert result.verified == 100
    assert result.missing.finish() == [OffsetRange(0, 899, 900)]


def test_ranges_aligned_one_after_another_stop_at_their_end_and_carry_replays_over() -> None:
    """The audit's way: range 0..49, then 50..99, each continuing on the target where the last one stopped. The
    target replays 45..52 after 52 (an at-least-once restart): duplicates, counted in the second range."""
    records = source(0, 100)
    target = copied(records[:53] + records[45:])

    first = align_range(records[:50], target, frame(end=50, copied_to=50), locate=lambda _o: None, window=1000)
    assert (first.found.verified, first.found.missing.records, first.next_target_offset) == (50, 0, 50)

    later = [entry for entry in target if entry.offset >= (first.next_target_offset or 0)]
    second_frame = Frame(log_start=0, source_from=50, source_to=100, copied_to=100)
    second = align_range(records[50:], later, second_frame, locate=lambda _o: None, window=1000, recent=first.recent)
    found = second.found
    assert (found.verified, found.duplicates, found.missing.records, found.unexpected) == (50, 8, 0, 0)
    assert second.next_target_offset == len(target)


def test_a_range_whose_copies_the_target_lost_is_missing_and_the_next_range_reads_on() -> None:
    """10..19 were deleted on the target: the syncs place its next record at 20, after the range, so the range is
    missing and the next one starts there."""
    records = source(0, 30)
    target = copied(records[:10] + records[20:])
    syncs: dict[int, Anchor] = {0: (0, 0), 10: (20, 10)}

    def locate(target_offset: int) -> Anchor:
        return syncs[max(d for d in syncs if d <= target_offset)]

    first = align_range(records[:10], target, frame(end=10, copied_to=10), locate=locate, window=100)
    assert first.next_target_offset == 10
    lost = align_range(
        records[10:20],
        [entry for entry in target if entry.offset >= 10],
        Frame(log_start=0, source_from=10, source_to=20, copied_to=20),
        locate=locate,
        window=100,
        recent=first.recent,
    )
    assert lost.found.missing.finish() == [OffsetRange(10, 19, 10)]
    assert (lost.found.verified, lost.found.altered_records, lost.next_target_offset) == (0, 0, 10)
    after = align_range(
        records[20:],
        [entry for entry in target if entry.offset >= 10],
        Frame(log_start=0, source_from=20, source_to=30, copied_to=30),
        locate=locate,
        window=100,
        recent=lost.recent,
    )
    assert (after.found.verified, after.found.missing.records, after.next_target_offset) == (10, 0, 20)


def test_a_replay_whose_restart_sync_was_never_written_is_not_a_loss() -> None:
    """At-least-once, nothing lost: task 1 copies 0..11 (syncs (0,0), (3,3)) and dies; task 2 replays 4..9 and
    dies before its first commit (its syncs never written); task 3 replays 4..19 (sync (4,18) on). The audit's
    ranges end at the progress: [0,4), [4,10), [10,14); only 3 verified entries are carried between ranges."""
    records = source(0, 20)
    target = copied([records[s] for s in [*range(0, 12), *range(4, 10), *range(4, 20)]])
    locate = PartitionLocator.of([(0, 0), (3, 3), (4, 18), (19, 33)])
    next_target, recent, lost = 0, deque[Entry](), []
    for first, end in ((0, 4), (4, 10), (10, 14)):
        ranged = align_range(
            records[first:],  # the source goes on past the range: where its copies end
            [entry for entry in target if entry.offset >= next_target],
            Frame(log_start=0, source_from=first, source_to=end, copied_to=end),
            locate=locate,
            window=20_000,
            recent=recent,
        )
        lost.append(ranged.found.missing.records + ranged.found.altered_records)
        next_target, recent = ranged.next_target_offset or next_target, deque(list(ranged.recent)[-3:])
    assert lost == [0, 0, 0]


def test_a_replay_of_identical_records_longer_than_the_window_is_duplicates_not_altered() -> None:
    digests = [1, 2, 3, 4, 5, 9, 6, 9, 7]  # 9: the same key, value and timestamp twice
    records = [Entry(offset, digest) for offset, digest in enumerate(digests)]
    target = copied([records[s] for s in [*range(0, 6), *range(0, 9)]])
    locate = PartitionLocator.of([(0, 0), (5, 5), (0, 6), (8, 14)])
    found = align(records, target, Frame(0, 0, 9, 9), locate=locate, window=3)
    assert (found.missing.records, found.altered_records, found.verified) == (0, 0, 9)


def test_without_syncs_a_record_lost_at_a_range_end_is_that_ranges_loss_only() -> None:
    records = source(0, 20)
    target = copied(records[:9] + records[10:])  # 9 really is lost
    first = align_range(records, target, Frame(0, 0, 10, 10), locate=lambda _t: None, window=20_000)
    assert first.found.missing.finish() == [OffsetRange(9, 9, 1)]
    assert first.next_target_offset == 9
    rest = [entry for entry in target if entry.offset >= 9]
    second = align_range(records[10:], rest, Frame(0, 10, 20, 20), locate=lambda _t: None, window=20_000)
    assert (second.found.verified, second.found.missing.records, second.found.altered_records) == (10, 0, 0)


def test_without_syncs_a_target_of_changed_records_is_a_loss_even_when_the_source_was_trimmed() -> None:
    """An MM2 flow (no progress, no syncs) whose source starts at 50 now: every target record differs."""
    target = [Entry(offset, 7_000_000 + offset) for offset in range(50)]
    found = align(source(50, 100), target, Frame(log_start=50, source_from=50, source_to=100, copied_to=None))
    assert found.missing.records + found.altered_records == 50


def test_a_tail_the_target_does_not_hold_yet_can_wait_for_the_next_range() -> None:
    records = source(0, 10)
    target = copied(records[:6])  # 6..9 not visible on the target yet (markers of the transaction pending)
    frame_ = Frame(log_start=0, source_from=0, source_to=10, copied_to=10)
    waiting = align_range(records, target, frame_, locate=lambda _t: None, window=100, defer=True)
    assert (waiting.found.verified, waiting.found.missing.records) == (6, 0)
    assert (waiting.next_source_offset, waiting.next_target_offset) == (6, 6)
    settled = align_range(records, target, frame_, locate=lambda _t: None, window=100, defer=False)
    assert settled.found.missing.finish() == [OffsetRange(6, 9, 4)]
    assert settled.next_source_offset == 10


def test_a_record_another_producer_appended_after_the_last_copy_is_unexpected() -> None:
    """Split brain: the mirror copied 0..99, then an application wrote into the remote topic. The newest sync
    places that record after the source's end: no source record explains it."""
    records = source(0, 100)
    target = [*copied(records), Entry(100, 5)]
    found = align(records, target, frame(), locate=lambda _t: (0, 0), later=set())
    assert (found.verified, found.unexpected, found.unexpected_offsets) == (100, 1, [100])
    copied_meanwhile = align(records, copied(source(0, 101)), frame(), locate=lambda _t: (0, 0), later={1100})
    assert (copied_meanwhile.verified, copied_meanwhile.unexpected) == (100, 0)  # a later source record's copy


def _scenario(seed: int) -> tuple[list[Entry], list[Entry], Frame, dict[str, Any]]:
    """A source partition and a copy with every kind of damage at random: gaps, replays, changed records, foreign
    records, identical records, a trimmed source, syncs or none, a small read-ahead window."""
    rng = random.Random(seed)
    size = rng.randint(0, 120)
    digests = [rng.choice([1000 + offset, 7, 8]) if rng.random() < 0.05 else 1000 + offset for offset in range(size)]
    records = [Entry(offset, digest) for offset, digest in enumerate(digests)]
    copy: list[int] = []  # digests in target order
    syncs: list[Anchor] = []
    at = 0
    while at < size:
        step = rng.randint(1, 15)
        kind = rng.random()
        if kind < 0.55:
            syncs.append((at, len(copy)))
            copy += digests[at : at + step]
            at += step
        elif kind < 0.65:
            at += step  # lost on the target
        elif kind < 0.75:
            back = max(0, at - step)
            syncs.append((back, len(copy)))
            copy += digests[back:at]  # replayed
        elif kind < 0.85:
            copy += [rng.randint(1, 5) for _ in range(rng.randint(1, 3))]  # changed or foreign
            at += rng.randint(0, 2)
        else:
            copy.append(digests[at] + 1)  # one record changed
            at += 1
    target = [Entry(offset, digest) for offset, digest in enumerate(copy)]
    log_start = rng.choice([0, 0, rng.randint(0, max(0, size // 3))])
    source_from = rng.choice([log_start, rng.randint(log_start, max(log_start, size // 2))])
    source_to = rng.choice([size, rng.randint(source_from, size)]) if size else 0
    copied_to = rng.choice([None, source_to, rng.randint(0, size)])
    options: dict[str, Any] = {"window": rng.choice([2, 5, 40, 1_000])}
    if syncs and rng.random() < 0.7:
        options["locate"] = PartitionLocator.of(syncs)
    if source_to == size and rng.random() < 0.5:
        options["later"] = {rng.randint(1, 5)}
    frame = Frame(log_start=log_start, source_from=source_from, source_to=source_to, copied_to=copied_to)
    return [r for r in records if r.offset >= source_from], target, frame, options


def _plain(found: Alignment) -> tuple[Any, ...]:
    return (
        found.verified,
        found.missing.finish(),
        found.altered,
        found.altered_records,
        found.duplicates,
        found.duplicate_offsets,
        found.unexpected,
        found.unexpected_offsets,
        found.expired.finish(),
        found.source_gone,
        found.not_yet_copied,
    )


@pytest.mark.parametrize("seed", range(150))
def test_findings_are_the_same_in_blocks_of_any_size_as_one_record_at_a_time(seed: int) -> None:
    source, target, frame_, options = _scenario(seed)
    one_by_one = aligning.align(blocks_of(source, 1), blocks_of(target, 1), frame_, **options)
    assert _plain(align(source, target, frame_, **options)) == _plain(one_by_one)


@pytest.mark.parametrize("seed", range(150))
def test_ranges_find_the_same_in_blocks_of_any_size_as_one_record_at_a_time(seed: int) -> None:
    source, target, whole, options = _scenario(seed)
    options.pop("later", None)
    options.setdefault("locate", lambda _offset: None)
    cut = (whole.source_from + whole.source_to) // 2
    first_half = Frame(whole.log_start, whole.source_from, cut, cut)

    def summary(ranged: RangeAlignment) -> tuple[Any, ...]:
        return _plain(ranged.found), ranged.next_target_offset, ranged.next_source_offset, list(ranged.recent)

    for defer in (True, False):
        one_by_one = aligning.align_range(
            blocks_of(source, 1), blocks_of(target, 1), first_half, defer=defer, **options
        )
        assert summary(align_range(source, target, first_half, defer=defer, **options)) == summary(one_by_one)
