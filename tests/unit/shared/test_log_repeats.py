"""Client-library lines during an outage: each cause (its numbers, addresses and ids aside) is written once, then
at most once a minute with how many were left out; the service's own events never are."""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
import textwrap

from shared.log_repeats import REPEAT_WINDOW_S, RepeatLimiter, cause_of
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


def test_a_cause_is_the_message_without_node_ids_addresses_ports_errnos_and_durations() -> None:
    def same(*messages: str) -> None:
        assert len({cause_of(message) for message in messages}) == 1, [cause_of(m) for m in messages]

    same(
        "Unable connect to node with id 1: [Errno 111] Connect call failed ('127.0.0.1', 45678)",
        "Unable connect to node with id 3: [Errno 113] Connect call failed ('10.0.12.7', 9092)",
    )
    same(
        "Connect call failed ('::1', 9092, 0, 0)",
        "Connect call failed ('fe80::2a:1', 9093, 0, 0)",
    )
    same("Unable to update metadata from [1]", "Unable to update metadata from [2]")
    same(
        "[thrd:127.0.0.1:41871/bootstrap]: 127.0.0.1:41871/bootstrap: Connect to ipv4#127.0.0.1:41871 failed: "
        "Connection refused (after 0ms in state CONNECT)",
        "[thrd:127.0.0.1:41871/bootstrap]: 127.0.0.1:41871/bootstrap: Connect to ipv4#127.0.0.1:41871 failed: "
        "Connection refused (after 12ms in state CONNECT, 4 identical error(s) suppressed)",
    )
    same("request 5f3a9b2c1d0e4f6a timed out", "request 0b8e77d2c4a1f09e timed out")
    assert cause_of("Unable to update metadata from [1]") != cause_of("Unable connect to node with id 1: refused")
    assert cause_of("Connection refused") != cause_of("Connection reset by peer")


def test_the_window_is_a_minute() -> None:
    assert REPEAT_WINDOW_S == 60


def _lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_librdkafka_lines_through_the_relay_are_limited_per_cause_across_clients() -> None:
    stream = io.StringIO()
    clock = Clock()
    configure_logging("checkpoint", "INFO", stream=stream, repeats=RepeatLimiter(window_s=60, clock=clock))
    fail = "%3|{t}|FAIL|rdkafka#producer-{n}| 127.0.0.1:1/bootstrap: Connect to ipv4#127.0.0.1:1 failed: " + (
        "Connection refused (after {ms}ms in state CONNECT)\n"
    )
    for n in range(100):  # a new client every time (a task restarting), each line a few ms different
        log_native_line(fail.format(t=1000 + n * 0.05, n=n, ms=n % 7))
    log_native_line("%3|1.0|FAIL|rdkafka#producer-1| 127.0.0.1:1/1: Disconnected: connection reset by peer\n")
    clock.now += 30
    log_native_line(fail.format(t=2000, n=200, ms=3))
    clock.now += 31
    log_native_line(fail.format(t=3000, n=300, ms=5))
    lines = _lines(stream)
    assert [(line["client"], line.get("repeated")) for line in lines] == [
        ("rdkafka#producer-0", None),
        ("rdkafka#producer-1", None),  # another cause: written
        ("rdkafka#producer-300", 100),  # a minute on: written, with the 99 + 1 left out
    ]


def test_aiokafka_repeats_are_limited_per_cause_and_the_services_own_events_never_are() -> None:
    stream = io.StringIO()
    configure_logging("heartbeat", "INFO", stream=stream)
    for port in range(50):
        logging.getLogger("aiokafka.conn").error(
            "Unable connect to node with id 1: [Errno 111] Connect call failed ('127.0.0.1', %s)", 40000 + port
        )
        logging.getLogger("strait.heartbeat").error("emit_failed")
    lines = _lines(stream)
    assert sum(line["event"] == "emit_failed" for line in lines) == 50
    assert sum(str(line["event"]).startswith("Unable connect") for line in lines) == 1


def test_a_spark_workers_json_lines_are_limited_like_the_drivers_own_but_its_events_never_are() -> None:
    stream = io.StringIO()
    configure_logging("strait-data-mirror", "INFO", stream=stream)
    for worker in range(40):  # every worker process logs the outage; the driver relays their lines
        aiokafka = {"event": "Unable to update metadata from [1]", "logger": "aiokafka.client", "level": "error"}
        log_native_line(json.dumps({**aiokafka, "service": "strait-data-mirror"}) + "\n")
        task = {"event": "task_failed", "logger": "data-mirror.task", "level": "warning", "slot": worker % 2}
        log_native_line(json.dumps(task) + "\n")
    events = [line["event"] for line in _lines(stream)]
    assert events.count("Unable to update metadata from [1]") == 1
    assert events.count("task_failed") == 40


def test_a_command_relaying_its_stderr_writes_each_librdkafka_cause_there_once() -> None:
    """The demo's console: its own clients' lines pass the limiter, and the log going to stderr does not loop
    back through the relay's pipe."""
    program = textwrap.dedent(
        """
        import os, time
        from shared.observability import configure_logging
        from shared.native_output import relay_native_stderr
        import structlog, sys
        configure_logging("strait-cli", level="WARNING", stream=sys.stderr)
        relay_native_stderr()
        for n in range(200):
            line = f"%3|{n}.5|FAIL|rdkafka#consumer-{n % 3}| [thrd:127.0.0.1:9/bootstrap]: Connect to ipv4#127.0.0.1:9 "
            os.write(2, (line + f"failed: Connection refused (after {n % 5}ms in state CONNECT)\\n").encode())
        structlog.get_logger("demo").warning("own_warning")
        time.sleep(1)
        """
    )
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True)
    events = [json.loads(line)["event"] for line in result.stderr.splitlines()]
    assert len([event for event in events if "Connection refused" in event]) == 1, result.stderr[-2000:]
    assert events.count("own_warning") == 1
    assert result.stdout == ""
