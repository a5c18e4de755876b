"""CheckpointTable: latest checkpoint per group-partition by log offset, bad records skipped, group filter."""

from __future__ import annotations

from services.checkpoint.checkpoint_table import CheckpointTable
from shared.kafka.follow import FollowedRecord
from shared.records import Checkpoint


def record(checkpoint: Checkpoint, offset: int) -> FollowedRecord:
    return FollowedRecord(offset, checkpoint.record_key(), checkpoint.record_value(), 0)


def test_a_late_read_never_hides_a_newer_own_write() -> None:
    table = CheckpointTable()
    older = Checkpoint("g", "A.t", 0, 100, 100)
    newer = Checkpoint("g", "A.t", 0, 150, 150)
    assert table.apply(newer, 8)  # written by this instance, acknowledged at offset 8
    table.handle_records([record(older, 7)])  # the follower reads an earlier record afterwards
    assert table.for_group("g") == {("A.t", 0): newer}
    table.handle_records([record(newer, 8), record(Checkpoint("g", "A.t", 0, 90, 90), 9)])
    assert table.for_group("g")[("A.t", 0)].downstream_offset == 90  # a later record wins (upstream rewind)


def test_undecodable_records_and_tombstones_are_skipped() -> None:
    table = CheckpointTable()
    good = Checkpoint("g", "A.t", 1, 5, 6, "m")
    table.handle_records(
        [
            FollowedRecord(0, b"\x00", b"\x00\x01", 0),
            FollowedRecord(1, good.record_key(), None, 0),
            record(good, 2),
        ]
    )
    assert table.invalid_records == 1
    assert table.for_group("g") == {("A.t", 1): good}
    assert table.partition_count() == 1
    assert table.partition_count(["other"]) == 0


def test_only_wanted_groups_are_kept() -> None:
    table = CheckpointTable(lambda group: group.startswith("keep"))
    kept, dropped = Checkpoint("keep-1", "A.t", 0, 1, 1), Checkpoint("drop", "A.t", 0, 1, 1)
    table.handle_records([record(kept, 0), record(dropped, 1)])
    assert table.groups() == ["keep-1"]


def test_records_being_written_here_are_not_decoded_again_when_read_back() -> None:
    table = CheckpointTable()
    own = Checkpoint("g", "A.t", 0, 10, 10)
    table.writing([(own.record_key(), own.record_value())])
    other = Checkpoint("h", "A.t", 0, 7, 7)
    table.handle_records([record(own, 5), record(other, 6)])
    assert table.for_group("g") == {}  # left to the writer, which applies it at its acknowledged offset
    assert table.for_group("h") == {("A.t", 0): other}
    table.apply(own, 5)
    newer = Checkpoint("g", "A.t", 0, 20, 20)
    table.handle_records([record(own, 7), record(newer, 8)])  # the same bytes again: another writer's, applied
    assert table.for_group("g") == {("A.t", 0): newer}


def test_tombstones_and_records_of_a_failed_write_are_handled_as_any_record() -> None:
    table = CheckpointTable()
    own = Checkpoint("g", "A.t", 0, 10, 10)
    table.writing([(own.record_key(), own.record_value())])
    table.not_writing([(own.record_key(), own.record_value())])
    table.handle_records([FollowedRecord(4, b"k", None, 0), record(own, 5)])
    assert table.for_group("g") == {("A.t", 0): own}
