"""An error logged when it changes and once when it clears, however often the work fails meanwhile."""

from __future__ import annotations

import structlog
from structlog.testing import capture_logs

from shared.error_state import ErrorState, FlowHealth


def test_a_repeated_failure_is_one_line_and_the_recovery_one_more() -> None:
    state = ErrorState(structlog.get_logger("t"), "emit_failed", "emit_recovered")
    with capture_logs() as logs:
        state.cleared()  # nothing failed yet: nothing to say
        for _ in range(3):
            state.failed(OSError("broker down"), cluster="B")
        state.failed(OSError("not authorized"), cluster="B")
        assert state.current == "not authorized"
        state.cleared()
        state.cleared()
    assert [(log["event"], log.get("error") or log.get("after")) for log in logs] == [
        ("emit_failed", "broker down"),
        ("emit_failed", "not authorized"),
        ("emit_recovered", "not authorized"),
    ]
    assert logs[0]["cluster"] == "B"
    assert state.current is None


def test_a_flows_health_logs_new_failures_once_per_work_and_names_the_first_failing_work() -> None:
    health = FlowHealth(structlog.get_logger("t"), "operation_failed", "recovered")
    groups_down = [OSError(f"group g{n}: coordinator not available") for n in range(1000)]
    with capture_logs() as logs:
        assert health.note("read group offsets", groups_down) is True  # the flow starts failing
        assert health.note("read group offsets", groups_down) is False  # the same 1,000 failures: no new line
        assert health.note("write checkpoints", [OSError("target down")]) is False  # still the first work's error
        assert health.last_error == "group g0: coordinator not available"
        assert health.note("read group offsets", []) is True  # recovered: the other work's error shows now
        assert health.last_error == "target down"
        assert (
            health.note(
                "write checkpoints",
                [],
            )
            is True
        )
    assert health.last_error is None
    assert not health.failing()
    assert [(log["event"], log["work"], log.get("failures")) for log in logs] == [
        ("operation_failed", "read group offsets", 1000),
        ("operation_failed", "write checkpoints", 1),
        ("recovered", "read group offsets", None),
        ("recovered", "write checkpoints", None),
    ]
