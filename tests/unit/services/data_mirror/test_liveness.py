"""data-mirror's /health: alive while its loop comes round, starting or stopping; not alive once it is stuck."""

from __future__ import annotations

from services.data_mirror.liveness import RoundClock


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_loop_that_stops_coming_round_is_reported_dead_and_recovers_when_it_does() -> None:
    clock = _Clock()
    rounds = RoundClock(stuck_after_s=120, clock=clock)
    assert rounds.liveness(running=True)[0], "before the first round (Spark starting): alive"
    rounds.round()
    clock.now += 119
    assert rounds.liveness(running=True)[0]
    clock.now += 2
    alive, details = rounds.liveness(running=True)
    assert not alive
    assert "has not come round for 121s" in details["error"]
    assert rounds.liveness(running=False)[0], "stopping (tasks handing over): alive however long it takes"
    rounds.round()
    assert rounds.liveness(running=True) == (True, {"service": "data-mirror", "since_last_round_s": 0.0})
