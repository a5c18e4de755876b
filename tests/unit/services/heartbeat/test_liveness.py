"""Stall detection: live while fresh heartbeats arrive, stalled when they stop or never come."""

from __future__ import annotations

from services.heartbeat.liveness import Liveness

T0 = 1_700_000_000_000


def test_waiting_until_the_first_heartbeat_then_stalled_if_none_comes() -> None:
    liveness = Liveness(stall_after_ms=5000, started_ms=T0)
    assert liveness.state(T0 + 4000) == "waiting"
    assert liveness.age_ms(T0 + 4000) is None
    assert liveness.state(T0 + 5001) == "stalled"


def test_live_while_heartbeats_are_fresh_and_stalled_once_they_stop() -> None:
    liveness = Liveness(stall_after_ms=5000, started_ms=T0)
    for second in range(10):
        latency = liveness.observe(T0 + second * 1000, T0 + second * 1000 + 250)
        assert latency == 250
        assert liveness.state(T0 + second * 1000 + 300) == "live"
    assert liveness.age_ms(T0 + 14_000) == 5000
    assert liveness.state(T0 + 14_000) == "live"
    assert liveness.state(T0 + 14_001) == "stalled"
    liveness.observe(T0 + 14_500, T0 + 14_600)
    assert liveness.state(T0 + 14_600) == "live"
    assert liveness.received == 11


def test_old_heartbeats_read_at_start_do_not_count_as_live() -> None:
    liveness = Liveness(stall_after_ms=5000, started_ms=T0)
    liveness.observe(T0 - 3_600_000, T0 + 100)  # the last record of a topic nobody mirrors any more
    assert liveness.state(T0 + 200) == "stalled"


def test_an_older_heartbeat_read_late_never_makes_the_flow_look_fresher() -> None:
    liveness = Liveness(stall_after_ms=5000, started_ms=T0)
    liveness.observe(T0 + 2000, T0 + 2100)
    liveness.observe(T0 + 1000, T0 + 2200)
    assert liveness.newest_ms == T0 + 2000
    assert liveness.last_latency_ms == 1200


def test_a_heartbeat_stamped_far_ahead_is_not_taken_as_the_newest() -> None:
    liveness = Liveness(stall_after_ms=5000, started_ms=T0)
    liveness.observe(T0 + 1000, T0 + 1100)
    # A hostile record, or an emitter whose clock jumped a day: believed, it would keep the flow live for a day.
    assert liveness.observe(T0 + 86_400_000, T0 + 1200) is None
    assert liveness.newest_ms == T0 + 1000
    assert liveness.ahead == 1
    assert liveness.state(T0 + 6001) == "stalled"
    assert liveness.observe(T0 + 7000 + 60_000, T0 + 7000) == 0  # a minute ahead: within what clocks differ by
    assert liveness.state(T0 + 8000) == "live"
