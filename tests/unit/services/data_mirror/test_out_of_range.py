"""A position the source no longer holds: where copying goes on (auto.offset.reset, as MM2's consumer does) and
how every skipped record is counted, with its range, whichever reset the user chose."""

from __future__ import annotations

from services.data_mirror.partition_copy import Clock, PartitionCopy
from services.data_mirror.sync_rules import SyncTracker
from services.data_mirror.work import PartitionWork


def _part() -> PartitionCopy:
    work = PartitionWork("orders", 0, "A.orders", max_record_bytes=1000)
    return PartitionCopy(work, None, 0, SyncTracker(100), Clock(retry_s=30))


def test_earliest_goes_on_at_the_log_start_and_counts_the_deleted_records() -> None:
    part = _part()
    assert part.skip_out_of_range(10, 50, 90, to_latest=False) == 50
    report = part.report()
    assert (report.expired, report.expired_from, report.expired_to) == (40, 10, 50)


def test_latest_goes_on_at_the_end_and_counts_every_record_it_skips_retained_ones_too() -> None:
    part = _part()
    assert part.skip_out_of_range(10, 50, 90, to_latest=True) == 90
    report = part.report()
    assert (report.expired, report.expired_from, report.expired_to) == (80, 10, 90)


def test_a_refusal_waiting_at_a_skipped_record_is_dropped_with_it() -> None:
    part = _part()
    part.refuse(10, "too large")
    part.skip_out_of_range(10, 50, 90, to_latest=False)
    assert part.refused_at is None
    assert part.held_at is None
    assert part.report().blocked_offset is None


def test_a_position_past_the_end_is_a_reset_not_an_expiry() -> None:
    part = _part()
    part.position = 120
    assert part.skip_out_of_range(120, 0, 90, to_latest=False) == 0
    assert part.next_position() == 0, "progress goes back with the copy"
    part.rewind()  # nothing in flight
    report = part.report()
    assert (report.expired, report.reset_from, report.reset_to) == (0, 120, 0)
    assert part.report().reset_from is None, "reported once"


def test_two_skips_in_one_interval_report_their_whole_span() -> None:
    part = _part()
    part.skip_out_of_range(10, 20, 90, to_latest=False)
    part.skip_out_of_range(40, 60, 90, to_latest=False)
    report = part.report()
    assert (report.expired, report.expired_from, report.expired_to) == (30, 10, 60)
    assert part.report().expired_from is None, "a report resets the range"
