"""What native code and child processes write to stderr, turned into the service's JSON log lines.

librdkafka logs to the process's stderr from its own threads, and a child process (Spark's JVM, and the
PySpark workers whose output the JVM passes on) inherits that stderr. None of it is JSON. The relay puts a
pipe on file descriptor 2 and logs each line it reads through structlog, so a service writes one JSON
stream. Python's own `sys.stderr` keeps the original descriptor, so a crash's traceback is written directly
and never waits on the relay thread.
"""

from __future__ import annotations

import io
import json
import logging
import os
import re
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import structlog

# librdkafka: %<syslog level>|<seconds>|<facility>|<client.id>#<type>-<n>| <message> (Strait's client ids hold "|")
_LIBRDKAFKA = re.compile(r"^%(\d)\|[\d.]+\|([A-Z0-9_]+)\|(.*?#[a-z]+-\d+)\|\s?(.*)$")
# log4j's default pattern in Spark: yy/MM/dd HH:mm:ss LEVEL logger: message
_LOG4J_PLAIN = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d (TRACE|DEBUG|INFO|WARN|ERROR|FATAL) ([^:\s]+): (.*)$")
_JVM_WARNING = re.compile(r"^(WARNING|ERROR): (.*)$")
# Notices the JVM prints on every start that ask nothing of an operator (Spark's launcher always adds the
# incubating vector module): logged at info, so a default start has no warning.
_BENIGN = ("Using incubator modules",)
_LEVELS = {
    "trace": logging.DEBUG,
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "fatal": logging.CRITICAL,
    "critical": logging.CRITICAL,
}
_RESERVED = frozenset({"event", "level", "logger", "timestamp", "service"})


@dataclass(frozen=True)
class NativeLine:
    """One stderr line as a log event: which logger, how severe, what it said, and any structure it had."""

    logger: str
    level: int
    event: str
    fields: dict[str, Any] = field(default_factory=dict)


def parse_native_line(line: str) -> NativeLine:
    """Read one line of native output; anything unrecognised is kept whole at info level."""
    text = line.rstrip("\r\n")
    if text.startswith("{"):
        parsed = _json_event(text)
        if parsed is not None:
            return parsed
    match = _LIBRDKAFKA.match(text)
    if match:
        syslog, facility, client, message = match.groups()
        return NativeLine("librdkafka", _syslog_level(int(syslog)), message, {"facility": facility, "client": client})
    match = _LOG4J_PLAIN.match(text)
    if match:
        level, logger, message = match.groups()
        return NativeLine(logger, _LEVELS[level.lower()], message)
    match = _JVM_WARNING.match(text)
    if match:
        kind, message = match.groups()
        level = logging.INFO if message.startswith(_BENIGN) else _LEVELS[kind.lower()]
        return NativeLine("jvm", level, message)
    return NativeLine("stderr", logging.INFO, text)


def _json_event(text: str) -> NativeLine | None:
    """A line that is already a JSON log event (log4j's JSON pattern, a worker's structlog line)."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    event = data.get("event", data.get("message"))
    if not isinstance(event, str):
        return None
    level = _LEVELS.get(str(data.get("level", "info")).lower(), logging.INFO)
    fields = {key: value for key, value in data.items() if key not in _RESERVED and key != "message" and value != ""}
    return NativeLine(str(data.get("logger") or "jvm"), level, event, fields)


def _syslog_level(level: int) -> int:
    if level <= 3:
        return logging.ERROR
    if level == 4:
        return logging.WARNING
    if level <= 6:
        return logging.INFO
    return logging.DEBUG


def log_native_line(line: str) -> None:
    """Log one line of native output as a structlog event. Client-library lines (librdkafka's, and a Spark
    worker's aiokafka lines) are limited per cause by the log handler's RepeatFilter, as in-process ones are."""
    if not line.strip():
        return
    parsed = parse_native_line(line)
    structlog.get_logger(parsed.logger).log(parsed.level, parsed.event, **parsed.fields)


class _CurrentStderr:
    """Writes to whatever `sys.stderr` is when a line is written (a live terminal view may swap it in and out)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


class NativeStderrRelay:
    """Owns the pipe on descriptor 2 and the thread that logs what arrives on it."""

    def __init__(self) -> None:
        original = os.dup(2)
        previous = sys.stderr
        # Python's own error output (tracebacks, faulthandler) keeps going straight to the original stderr.
        sys.stderr = io.TextIOWrapper(os.fdopen(original, "wb", buffering=0), write_through=True, errors="replace")
        # A log handler writing to stderr (the CLI's) keeps writing there, not into the pipe it would read back.
        for handler in logging.getLogger().handlers:
            if isinstance(handler, logging.StreamHandler) and handler.stream is previous:
                handler.setStream(_CurrentStderr())
        read_end, write_end = os.pipe()
        os.dup2(write_end, 2)
        os.close(write_end)
        self._reader: BinaryIO = os.fdopen(read_end, "rb")
        self._thread = threading.Thread(target=self._pump, name="native-stderr", daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        for raw in self._reader:  # a line as soon as it is complete: reads return what the pipe holds
            try:
                log_native_line(raw.decode("utf-8", errors="replace"))
            except Exception as exc:  # a line we cannot log must not stop the relay: writers would block
                print(f"native-stderr relay: {type(exc).__name__}: {exc}", file=sys.stderr)


_relay: NativeStderrRelay | None = None


def relay_native_stderr() -> None:
    """Route descriptor 2 through the JSON log (once per process; call after `configure_logging`)."""
    global _relay
    if _relay is None:
        _relay = NativeStderrRelay()
