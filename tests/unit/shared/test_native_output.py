"""Native stderr (librdkafka, Spark's JVM, child processes) comes out of a service as JSON log lines."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap

from shared.native_output import parse_native_line


def test_librdkafka_lines_keep_their_severity_facility_and_client() -> None:
    line = "%4|1795483252.265|GETPID|rdkafka#producer-3| [thrd:main]: Failed to acquire idempotence PID: retrying\n"
    parsed = parse_native_line(line)
    assert (parsed.logger, parsed.level) == ("librdkafka", logging.WARNING)
    assert parsed.event == "[thrd:main]: Failed to acquire idempotence PID: retrying"
    assert parsed.fields == {"facility": "GETPID", "client": "rdkafka#producer-3"}
    assert parse_native_line("%3|1.0|FAIL|rdkafka#consumer-1| down").level == logging.ERROR
    assert parse_native_line("%7|1.0|BROKER|rdkafka#consumer-1| detail").level == logging.DEBUG
    named = parse_native_line("%3|1.0|FAIL|strait-data-mirror|A->B|task-0|consumer#consumer-2| [thrd:b]: down|up")
    assert (named.level, named.event) == (logging.ERROR, "[thrd:b]: down|up")
    assert named.fields == {"facility": "FAIL", "client": "strait-data-mirror|A->B|task-0|consumer#consumer-2"}


def test_spark_log4j_lines_json_or_plain_keep_logger_and_level() -> None:
    json_line = '{"level":"ERROR","logger":"org.apache.spark.SparkContext","event":"boom","exception":"java.x: y"}'
    parsed = parse_native_line(json_line)
    assert (parsed.logger, parsed.level, parsed.event) == ("org.apache.spark.SparkContext", logging.ERROR, "boom")
    assert parsed.fields == {"exception": "java.x: y"}
    empty_exception = parse_native_line('{"level":"WARN","logger":"a.B","event":"w","exception":""}')
    assert empty_exception.fields == {}
    plain = parse_native_line("26/11/24 01:17:28 WARN Utils: Set SPARK_LOCAL_IP if you need to bind elsewhere")
    assert (plain.logger, plain.level, plain.event) == (
        "Utils",
        logging.WARNING,
        "Set SPARK_LOCAL_IP if you need to bind elsewhere",
    )


def test_the_jvm_start_notice_is_not_a_warning_but_other_jvm_warnings_are() -> None:
    assert parse_native_line("WARNING: Using incubator modules: jdk.incubator.vector").level == logging.INFO
    assert parse_native_line("WARNING: A terminally deprecated method was called").level == logging.WARNING


def test_anything_else_is_kept_whole() -> None:
    parsed = parse_native_line("Traceback (most recent call last):\n")
    assert (parsed.logger, parsed.level, parsed.event) == ("stderr", logging.INFO, "Traceback (most recent call last):")
    assert parse_native_line("{not json").event == "{not json"
    assert parse_native_line('["a list"]').event == '["a list"]'


def test_a_service_process_writes_only_json_even_from_native_code_and_children() -> None:
    program = textwrap.dedent(
        """
        import os, subprocess, sys, time
        from shared.observability import configure_logging
        from shared.native_output import relay_native_stderr
        import structlog
        configure_logging("strait-test")
        relay_native_stderr()
        structlog.get_logger("svc").info("own_event", n=1)
        os.write(2, b"%4|1.0|CONFWARN|rdkafka#producer-1| [thrd:app]: a warning from C\\n")
        subprocess.run(["sh", "-c", "echo 'WARNING: from a child' >&2; echo 'plain child line' >&2"], check=True)
        print("python's own stderr stays direct", file=sys.stderr)
        time.sleep(0.5)
        """
    )
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True)
    events = [json.loads(line) for line in result.stdout.splitlines()]
    by_event = {event["event"]: event for event in events}
    assert by_event["own_event"]["n"] == 1
    native = by_event["[thrd:app]: a warning from C"]
    assert (native["logger"], native["level"], native["facility"]) == ("librdkafka", "warning", "CONFWARN")
    assert by_event["from a child"]["level"] == "warning"
    assert by_event["plain child line"]["service"] == "strait-test"
    assert result.stderr == "python's own stderr stays direct\n"
