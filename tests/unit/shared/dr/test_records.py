"""The DR topic's records: they survive a round trip, and what a reader cannot read is skipped, never a crash."""

from __future__ import annotations

import json

from shared.dr.records import DrReport, FlowDrState, PartitionPoint, decode_record, encode_record
from shared.dr.store import DrView


def test_a_state_and_a_report_come_back_as_written() -> None:
    state = FlowDrState(flow="A->B", state="failed-over", action="failover", report_id="r1", by="ops@host")
    report = DrReport(
        flow="A->B",
        id="r1",
        kind="failover",
        planned=False,
        dry_run=False,
        started_ms=1,
        points=[PartitionPoint(topic="orders", partition=0, remote_topic="A.orders", source_offset=5, target_offset=5)],
    )
    assert decode_record(encode_record(state)) == state
    assert decode_record(encode_record(report)) == report
    assert state.stopped


def test_unknown_types_newer_versions_and_bad_bytes_are_skipped() -> None:
    newer = json.dumps({"type": "flow-state", "version": 99, "flow": "A->B", "state": "active"}).encode()
    assert decode_record(newer) is None
    assert decode_record(b'{"type": "something-else", "flow": "A->B"}') is None
    assert decode_record(b"\xff not json") is None
    assert decode_record(b'{"type": "flow-state", "flow": "A->B", "state": "gone"}') is None
    assert decode_record(None) is None


def test_the_view_keeps_each_flows_latest_state_and_its_reports_in_order() -> None:
    view = DrView()
    view.apply(FlowDrState(flow="A->B", state="failed-over", report_id="r1"))
    view.apply(DrReport(flow="A->B", id="r1", kind="failover", planned=True, dry_run=False, started_ms=1))
    view.apply(FlowDrState(flow="A->B", state="active", report_id="r2"))
    view.apply(DrReport(flow="A->B", id="r2", kind="failback", planned=True, dry_run=False, started_ms=2))
    state = view.states["A->B"]
    last = view.last_report("A->B")
    assert state.state == "active"
    assert last is not None
    assert last.id == "r2"
    assert view.last_report("B->A") is None
