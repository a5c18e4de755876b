"""How a `strait` command fails: one line on stderr (a JSON object under --json) and a non-zero exit code."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

import typer
from rich.console import Console

from shared.errors import ConfigError, StraitError

EXIT_FAILED = 1
EXIT_CONFIG = 2
EXIT_UNHEALTHY = 3  # `strait status`: the answer was read, and a flow is not healthy

_err = Console(stderr=True)


class CliError(Exception):
    """A failure to report as one line; `code` is the exit code."""

    def __init__(self, message: str, code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def fail(message: str, code: int = EXIT_FAILED, *, as_json: bool = False) -> NoReturn:
    """Print `error: message` on one line (`{"error": ..., "exit_code": ...}` when `as_json`) and exit with `code`."""
    text = " ".join(message.split())
    if as_json:
        print(json.dumps({"error": text, "exit_code": code}), file=sys.stderr, flush=True)
    else:
        # The message quotes the user's keys and values: never read them as rich markup or emoji codes.
        _err.print("[red]error:[/red] ", end="", highlight=False)
        _err.print(text, markup=False, highlight=False, soft_wrap=True, emoji=False)
    raise typer.Exit(code)


@contextmanager
def one_line_errors(as_json: bool = False) -> Iterator[None]:
    """Turn CliError, ConfigError (exit 2) and other StraitErrors (exit 1) into one line and an exit code; under
    --json (`as_json`) the line is a JSON object, so a script reading the command's output can parse its errors."""
    try:
        yield
    except CliError as exc:
        fail(exc.message, exc.code, as_json=as_json)
    except ConfigError as exc:
        fail(str(exc), EXIT_CONFIG, as_json=as_json)
    except StraitError as exc:
        fail(str(exc), EXIT_FAILED, as_json=as_json)
    except TimeoutError as exc:
        fail(f"timed out: {exc}", EXIT_FAILED, as_json=as_json)


@contextmanager
def quiet_client_logs() -> Iterator[None]:
    """Keep librdkafka's own log lines (written straight to file descriptor 2) off the operator's terminal.

    The same failures come back as exceptions and are reported in one line; set STRAIT_CLIENT_LOGS=1 to see them.
    """
    if os.environ.get("STRAIT_CLIENT_LOGS") == "1":
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def require(value: object, message: str) -> None:
    """CliError (usage, exit 2) when `value` is missing."""
    if value is None or value == "":
        raise CliError(message, EXIT_CONFIG)
