"""Where a group resumes when it moves back to the source: through the offset syncs the other way, anchored at the
failover point, never past a record it did not read; and how each partition's move is decided."""

from __future__ import annotations

import pytest

from shared.dr.failover import group_pattern
from shared.dr.positions import back_to_source, plan_partition
from shared.dr.records import PartitionPoint
from shared.errors import ConfigError
from shared.offset_sync_store import OffsetSyncStore
from shared.records.offset_sync import OffsetSync, SyncSegment

TOPIC, PARTITION = "orders", 0


def _store(*syncs: tuple[int, int], segment: SyncSegment | None = None) -> OffsetSyncStore:
    store = OffsetSyncStore(initialization_must_read_to_end=False)
    for upstream, downstream in syncs:
        store.handle(OffsetSync(TOPIC, PARTITION, upstream, downstream), segment)
    store.mark_read_to_end()
    return store


def _point(source_offset: int = 500, target_offset: int = 400) -> PartitionPoint:
    return PartitionPoint(
        topic=TOPIC, partition=PARTITION, remote_topic="A.orders", source_offset=source_offset,
        target_offset=target_offset,
    )  # fmt: skip


def test_inside_a_run_of_syncs_the_way_back_is_exact() -> None:
    segment = SyncSegment(writer=1, jumps=0)
    store = _store((100, 0), (200, 100), (300, 200), segment=segment)  # one run: down = up - 100
    assert store.translate_upstream(TOPIC, PARTITION, 150) == 250
    assert store.translate_upstream(TOPIC, PARTITION, 100) == 200


def test_between_syncs_of_different_runs_the_way_back_reads_again_rather_than_skip() -> None:
    store = _store((100, 0), (300, 50))  # upstream jumped 200 for 50 downstream: not one run
    assert store.translate_upstream(TOPIC, PARTITION, 50) == 300, "the sync's own copy maps to its upstream"
    assert store.translate_upstream(TOPIC, PARTITION, 60) == 301, "past it: one after the sync, never further"
    assert store.translate_upstream(TOPIC, PARTITION, 20) == 101


def test_before_every_sync_there_is_no_way_back() -> None:
    assert _store((100, 40)).translate_upstream(TOPIC, PARTITION, 10) is None
    assert OffsetSyncStore().translate_upstream(TOPIC, PARTITION, 10) is None, "not read to its end yet"


def test_a_group_that_read_everything_the_target_held_resumes_at_the_first_record_it_never_got() -> None:
    store = _store((100, 0), (499, 399))
    at, how = back_to_source(store, _point(), 400, tail="deliver", tail_end=530)
    assert (at, how) == (500, "tail")
    at, how = back_to_source(store, _point(), 400, tail="skip", tail_end=530)
    assert (at, how) == (530, "end"), "skipping goes past the old primary's un-mirrored records"


def test_a_group_behind_the_failover_point_goes_back_through_the_syncs_and_never_past_the_point() -> None:
    segment = SyncSegment(writer=1, jumps=0)
    store = _store((100, 0), (499, 399), segment=segment)
    assert back_to_source(store, _point(), 250, tail="skip", tail_end=530) == (350, "reverse")


def test_a_group_before_every_sync_left_starts_the_source_from_its_beginning() -> None:
    assert back_to_source(_store((300, 200)), _point(), 10, tail="deliver", tail_end=530) == (0, "start")


def test_a_group_whose_place_retention_took_resumes_at_the_oldest_record_left_never_at_a_gone_offset() -> None:
    syncs = _store((100, 50), (300, 200))
    assert back_to_source(syncs, _point(), 60, tail="deliver", tail_end=530, log_start=250) == (250, "log-start")
    assert back_to_source(syncs, _point(), 10, tail="deliver", tail_end=530, log_start=250) == (250, "start")
    assert back_to_source(syncs, _point(), 200, tail="deliver", tail_end=530, log_start=250) == (300, "reverse")


def test_a_groups_pattern_that_is_no_regex_is_refused_naming_it() -> None:
    with pytest.raises(ConfigError, match=r"--groups 'app-\[' is not a regular expression"):
        group_pattern("app-[")
    pattern = group_pattern("app-.*")
    assert pattern is not None
    assert pattern.fullmatch("app-1")
    assert group_pattern(None) is None


def test_a_partition_where_the_group_stands_further_is_kept_unless_rewinding_is_allowed() -> None:
    assert plan_partition(TOPIC, 0, 10, 15, allow_rewind=False).action == "kept-ahead"
    assert plan_partition(TOPIC, 0, 10, 15, allow_rewind=True).action == "set"
    assert plan_partition(TOPIC, 0, 10, 10, allow_rewind=False).action == "unchanged"
    move = plan_partition(TOPIC, 0, 10, None, allow_rewind=False, how="reverse")
    assert (move.action, move.how, move.previous_offset) == ("set", "reverse", None)
