"""An error logged when it changes and once when it clears, however often the work fails meanwhile."""

from __future__ import annotations

import structlog
from structlog.testing import capture_logs

from shared.error_state import ErrorState


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
