"""Identical client-library lines during an outage: the first is written, repeats once per window with a count."""

from __future__ import annotations

import io
import json
import logging

from shared.log_repeats import RepeatLimiter
from shared.native_output import log_native_line
from shared.observability import configure_logging


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_first_line_passes_repeats_in_the_window_are_counted_then_reported() -> None:
    clock = Clock()
    limiter = RepeatLimiter(window_s=30, clock=clock)
    assert limiter.admit("connect failed") == 0
    for _ in range(599):  # every 50 ms for 30 s
        clock.now += 0.05
        assert limiter.admit("connect failed") is None
    assert limiter.admit("another line") == 0  # a different line is its own kind
    clock.now += 0.1
    assert limiter.admit("connect failed") == 599  # the window is over: written, with how many were left out
    assert limiter.admit("connect failed") is None


def _lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_librdkafka_lines_through_the_relay_are_limited_per_client_and_message() -> None:
    stream = io.StringIO()
    configure_logging("checkpoint", "INFO", stream=stream)
    clock = Clock()
    repeats = RepeatLimiter(window_s=30, clock=clock)
    fail = "%3|1.0|FAIL|rdkafka#producer-1| 127.0.0.1:1/bootstrap: Connect to ipv4#127.0.0.1:1 failed\n"
    for _ in range(100):
        log_native_line(fail, repeats)
    log_native_line(fail.replace("producer-1", "producer-2"), repeats)
    clock.now += 31
    log_native_line(fail, repeats)
    lines = _lines(stream)
    assert [(line["client"], line.get("repeated")) for line in lines] == [
        ("rdkafka#producer-1", None),
        ("rdkafka#producer-2", None),
        ("rdkafka#producer-1", 99),
    ]


def test_aiokafka_repeats_are_limited_and_the_services_own_events_never_are() -> None:
    stream = io.StringIO()
    configure_logging("heartbeat", "INFO", stream=stream)
    for _ in range(50):
        logging.getLogger("aiokafka.conn").error("Unable connect to node with id 1: [Errno 111] Connect call failed")
        logging.getLogger("strait.heartbeat").error("emit_failed")
    lines = _lines(stream)
    assert sum(line["event"] == "emit_failed" for line in lines) == 50
    assert sum(str(line["event"]).startswith("Unable connect") for line in lines) == 1
