"""What a failover now would leave behind: records and seconds per partition, summed per topic and flow; and since
when a copy task has seen a partition hold records it had not copied (the age of the oldest of them)."""

from __future__ import annotations

from services.data_mirror.partition_copy import Clock, PartitionCopy
from services.data_mirror.sync_rules import SyncTracker
from services.data_mirror.work import PartitionWork
from shared.dr.rpo import PartitionLag, summarize

NOW = 1_000_000


def test_records_and_the_oldest_age_add_up_per_topic_and_flow() -> None:
    rpo = summarize(
        [
            PartitionLag("orders", 0, 90, 100, NOW - 4_000),
            PartitionLag("orders", 1, 50, 50, None),
            PartitionLag("clicks", 0, 10, 13, NOW - 9_000),
        ],
        now_ms=NOW,
    )
    assert (rpo.records, rpo.seconds, rpo.partitions, rpo.partitions_behind) == (13, 9.0, 3, 2)
    assert [(t.topic, t.records, t.seconds, t.partitions_behind) for t in rpo.topics] == [
        ("orders", 10, 4.0, 1),
        ("clicks", 3, 9.0, 1),
    ], "most behind first"


def test_a_flow_caught_up_has_nothing_behind_and_no_age() -> None:
    rpo = summarize([PartitionLag("orders", 0, 100, 100, None)], now_ms=NOW, as_of_ms=NOW - 5)
    assert (rpo.records, rpo.seconds, rpo.as_of_ms) == (0, 0.0, NOW - 5)


def test_behind_since_an_unknown_time_says_so_rather_than_zero() -> None:
    lag = PartitionLag("orders", 0, 90, 100, None)
    assert lag.seconds(NOW) is None
    assert PartitionLag("orders", 0, 90, None, None).records is None, "the end was never seen"


def _part() -> PartitionCopy:
    return PartitionCopy(PartitionWork("orders", 0, "A.orders"), None, 0, SyncTracker(100), Clock(retry_s=30))


def test_a_partition_that_stops_copying_ages_from_when_the_first_record_it_lacks_was_seen() -> None:
    part = _part()
    part.end_offset = 10
    assert part.note_end(1_000) == 1_000
    part.end_offset = 20
    assert part.note_end(2_000) == 1_000, "the oldest record not copied is still the first one"


def test_under_steady_traffic_a_partition_a_little_behind_stays_young() -> None:
    part = _part()
    for second in range(1, 6):
        part.position = part.acked = (second - 1) * 10  # what was there a commit ago is copied now
        part.end_offset = second * 10
        behind_since = part.note_end(second * 1_000)
        assert behind_since == second * 1_000, "only what arrived since the last commit is behind"


def test_a_partition_that_caught_up_has_no_age() -> None:
    part = _part()
    part.end_offset = 10
    part.note_end(1_000)
    part.position = 10
    assert part.note_end(2_000) is None
