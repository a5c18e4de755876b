"""A tool whose positions move while the hand-over watches is still running."""

from __future__ import annotations

from services.cli.migration.liveness import moved_while_watching


def test_positions_that_stay_put_mean_the_tool_stopped() -> None:
    before = {("orders", 0): 10}
    assert moved_while_watching("MM2", lambda: dict(before), before, 0.01) is None


def test_a_position_that_moves_is_named() -> None:
    before = {("orders", 0): 10, ("orders", 1): 4}
    reason = moved_while_watching("MM2", lambda: {("orders", 0): 12, ("orders", 1): 4}, before, 0.01)
    assert reason == (
        "MM2 is still copying: its position for orders-0 moved from 10 to 12 within 0.01s (1 partition(s) moved); "
        "stop it first"
    )


def test_a_position_that_appears_counts_as_a_move() -> None:
    reason = moved_while_watching("Strait's data-mirror", lambda: {("orders", 0): 1}, {}, 0.01)
    assert reason is not None
    assert "moved from None to 1" in reason
