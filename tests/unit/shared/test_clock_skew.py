"""Timestamps too far ahead of the reader's clock are not believed, and warned of without flooding the log."""

from __future__ import annotations

import structlog
from structlog.testing import capture_logs

from shared.clock_skew import MAX_AHEAD_MS, AheadLog, too_far_ahead
from shared.control.events import ServiceStatus
from shared.flow_status import summarize_flow

NOW = 1_700_000_000_000


def test_the_bound_is_five_minutes_ahead_of_the_reader() -> None:
    assert MAX_AHEAD_MS == 300_000
    assert not too_far_ahead(NOW + MAX_AHEAD_MS, NOW)
    assert too_far_ahead(NOW + MAX_AHEAD_MS + 1, NOW)
    assert not too_far_ahead(NOW - 86_400_000, NOW)  # old is old, not untrusted


def test_a_status_from_the_future_is_stale_unless_it_says_stopped() -> None:
    statuses = [
        ServiceStatus(flow="A->B", service="data-mirror", instance="dm-1", state="running", ts=NOW + 3_600_000),
        ServiceStatus(flow="A->B", service="audit", instance="au-1", state="stopped", ts=NOW + 3_600_000),
        ServiceStatus(flow="A->B", service="checkpoint", instance="cp-1", state="running", ts=NOW + 60_000),
    ]
    summary = summarize_flow("A", "B", statuses, now_ms=NOW, stale_after_s=30)
    assert [(i.instance, i.stale, i.age_s, i.clock_ahead_s) for i in summary.instances] == [
        ("au-1", False, 0.0, 3600.0),
        ("cp-1", False, 0.0, None),  # a minute ahead: clocks differ that much
        ("dm-1", True, 0.0, 3600.0),
    ]
    assert summary.state == "degraded"


def test_warnings_are_one_per_kind_and_place_per_window() -> None:
    now = [0.0]
    log = AheadLog(structlog.get_logger("test"), window_s=60, clock=lambda: now[0])
    with capture_logs() as logged:
        for _ in range(100):
            log.warn("heartbeats", NOW + 3_600_000, NOW, flow="A->B")
        log.warn("heartbeats", NOW + 3_600_000, NOW, flow="B->A")
        now[0] = 61.0
        log.warn("heartbeats", NOW + 3_600_000, NOW, flow="A->B")
    assert [(e["event"], e["flow"], e["repeated"], e["ahead_s"]) for e in logged] == [
        ("timestamp_ahead_of_clock", "A->B", 0, 3600.0),
        ("timestamp_ahead_of_clock", "B->A", 0, 3600.0),
        ("timestamp_ahead_of_clock", "A->B", 99, 3600.0),
    ]
