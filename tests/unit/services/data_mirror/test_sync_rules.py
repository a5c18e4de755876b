"""Offset syncs follow MM2's rules, plus a sync where target offsets jump and at every commit's last record."""

from __future__ import annotations

from services.data_mirror.sync_rules import PendingSync, SyncTracker


def _take(tracker: SyncTracker) -> list[tuple[int, int]]:
    return [(sync.upstream, sync.downstream) for sync in tracker.take()]


def _feed(tracker: SyncTracker, pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    for pair in pairs:
        tracker.delivered(*pair)
    return _take(tracker)


def test_first_record_every_offset_lag_max_and_the_last_before_a_commit() -> None:
    tracker = SyncTracker(offset_lag_max=100)
    assert _feed(tracker, [(i, i) for i in range(250)]) == [(0, 0), (101, 101), (202, 202), (249, 249)]
    assert _take(tracker) == []


def test_upstream_gap_downstream_jump_and_rewind_sync_at_once_and_close_the_run_before_them() -> None:
    tracker = SyncTracker(offset_lag_max=100)
    # compaction gap at 5; a transaction marker on the target at 4; the target truncated at the end
    pairs = [(0, 0), (1, 1), (5, 2), (6, 3), (7, 5), (8, 6), (9, 1)]
    # every run has a sync at both ends, so every record in it translates exactly
    assert _feed(tracker, pairs) == [(0, 0), (1, 1), (5, 2), (6, 3), (7, 5), (8, 6), (9, 1)]
    tracker = SyncTracker(offset_lag_max=100)
    assert _feed(tracker, [(i, i) for i in range(40)] + [(82, 40), (83, 41)]) == [(0, 0), (39, 39), (82, 40), (83, 41)]


def test_a_synced_last_record_needs_no_closing_sync() -> None:
    tracker = SyncTracker(offset_lag_max=100)
    assert _feed(tracker, [(10, 40)]) == [(10, 40)]
    assert _feed(tracker, [(11, 41)]) == [(11, 41)]


def test_a_commit_continues_the_run_without_a_new_sync() -> None:
    tracker = SyncTracker(offset_lag_max=100)
    assert _feed(tracker, [(0, 0), (1, 1), (2, 2)]) == [(0, 0), (2, 2)]
    assert _feed(tracker, [(3, 3), (4, 4)]) == [(4, 4)]


def test_a_source_with_a_gap_every_record_keeps_a_bounded_number_of_syncs() -> None:
    tracker = SyncTracker(offset_lag_max=100, max_pending=10)
    syncs = _feed(tracker, [(2 * i, i) for i in range(1000)])  # e.g. a transaction marker after every record
    assert len(syncs) == 11  # ten queued and the commit's last record
    assert syncs[0] == (0, 0)
    assert syncs[-1] == (1998, 999)
    assert tracker.left_out == 990  # the last of them is written as the closing sync


def test_each_sync_carries_the_jumps_seen_so_a_left_out_jump_still_splits_runs() -> None:
    tracker = SyncTracker(offset_lag_max=100, max_pending=2)
    for pair in [(0, 0), (2, 1), (4, 2), (6, 3), (7, 4)]:  # four jumps (the first record is one), room for two
        tracker.delivered(*pair)
    taken = tracker.take()
    # 4 and 6 left out; a sync at a jump opens its stretch, the last delivered record's sync (7) does not
    assert taken == [PendingSync(0, 0, 1, opens=True), PendingSync(2, 1, 2, opens=True), PendingSync(7, 4, 4)]
    tracker.delivered(8, 5)
    tracker.delivered(20, 6)
    # 8 closes the run before the jump, 20 opens the next
    assert tracker.take() == [PendingSync(8, 5, 4), PendingSync(20, 6, 5, opens=True)]
    assert SyncTracker(offset_lag_max=100).writer != tracker.writer  # each task life is its own writer


def _state(tracker: SyncTracker) -> tuple[object, ...]:
    return (tracker.pending, tracker.left_out, tracker.jumps, tracker.last_sync_downstream, tracker.take())


def test_a_forwarded_batch_gives_the_syncs_its_records_would_give_one_by_one() -> None:
    import random

    rng = random.Random(7)
    for case in range(300):
        lag_max = rng.choice([0, 1, 3, 100])
        max_pending = rng.choice([2, 5, 100])
        by_run = SyncTracker(offset_lag_max=lag_max, max_pending=max_pending, writer=1)
        by_record = SyncTracker(offset_lag_max=lag_max, max_pending=max_pending, writer=1)
        upstream, downstream = rng.randrange(0, 50), rng.randrange(0, 50)
        for _ in range(rng.randrange(1, 6)):
            count = rng.randrange(1, 400)
            by_run.delivered_run(upstream, downstream, count)
            for i in range(count):
                by_record.delivered(upstream + i, downstream + i)
            upstream += count + rng.choice([0, 0, 1, 7])  # a marker or a compacted gap between batches
            downstream += count + rng.choice([0, 0, 2])  # the target's own markers
            if rng.random() < 0.3:
                assert _state(by_run) == _state(by_record), case
        assert _state(by_run) == _state(by_record), case
