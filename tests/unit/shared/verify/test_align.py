"""The record-by-record alignment of a source partition with its remote copy: each finding counted and placed."""

from __future__ import annotations

from collections import deque

from shared.verify.align import Anchor, Entry, Frame, align, align_range
from shared.verify.findings import AlteredRecord, OffsetRange
from shared.verify.sync_index import PartitionLocator


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
