"""Offset syncs follow MM2's rules, plus a sync for each epoch's first and last record."""

from __future__ import annotations

from services.data_mirror.sync_rules import SyncTracker


def _synced(tracker: SyncTracker, pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    return [pair for pair in pairs if tracker.should_sync(*pair)]


def test_first_record_and_every_offset_lag_max() -> None:
    tracker = SyncTracker(offset_lag_max=100)
    synced = _synced(tracker, [(i, i) for i in range(250)])
    assert synced == [(0, 0), (101, 101), (202, 202)]
    assert tracker.closing_sync() == (249, 249)
    assert tracker.closing_sync() is None


def test_upstream_gap_and_downstream_rewind_sync_at_once() -> None:
    tracker = SyncTracker(offset_lag_max=100)
    pairs = [(0, 0), (1, 1), (5, 2), (6, 3), (7, 1)]  # compaction gap at 5; target truncated at the end
    assert _synced(tracker, pairs) == [(0, 0), (5, 2), (7, 1)]


def test_a_synced_last_record_needs_no_closing_sync() -> None:
    tracker = SyncTracker(offset_lag_max=100)
    assert _synced(tracker, [(10, 40)]) == [(10, 40)]
    assert tracker.closing_sync() is None
