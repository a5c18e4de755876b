"""The demo's summary waits until data-mirror's status counts what its remote topics hold, so it never says
"records mirrored 0" beside topics full of mirrored records (the status is published every few seconds)."""

from __future__ import annotations

from services.cli.demo_view import Snapshot, TopicRow
from shared.flow_status import FlowStatus, InstanceSummary


def snapshot(mirrored: int | None, on_target: tuple[int | None, ...], *, stale: bool = False) -> Snapshot:
    details = {} if mirrored is None else {"records_mirrored": mirrored}
    instance = InstanceSummary(
        service="data-mirror", instance="m:A->B", state="running", stale=stale, age_s=1.0, details=details
    )
    flow = FlowStatus(flow="A->B", source="A", target="B", state="running", instances=[instance])
    rows = [TopicRow("A->B", f"t{i}", f"A.t{i}", count, count) for i, count in enumerate(on_target)]
    return Snapshot(0.0, [flow], rows)


def test_a_status_counting_fewer_records_than_the_target_holds_trails_it() -> None:
    assert snapshot(0, (3, 4)).status_trails_target()
    assert snapshot(6, (3, 4)).status_trails_target()
    assert snapshot(None, (3,)).status_trails_target()  # no status from data-mirror yet


def test_a_status_counting_at_least_what_the_target_holds_is_caught_up() -> None:
    assert not snapshot(7, (3, 4)).status_trails_target()
    assert not snapshot(9, (3, 4)).status_trails_target()  # heartbeats and re-copies count too
    assert not snapshot(0, (0, None)).status_trails_target()  # nothing mirrored yet, nothing to count


def test_only_live_instances_count() -> None:
    assert snapshot(7, (3, 4), stale=True).status_trails_target()
