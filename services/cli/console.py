"""Where a `strait` command's tables go: a terminal gets its own width; a pipe or a file gets wide lines.

Rich lays out for 80 columns (or $COLUMNS, which many environments export as 80) when stdout is not a terminal,
which cut topic names and errors short in `strait status | tee` and in CI logs. A pipe has no width: tables take
what they need, up to PIPE_WIDTH.
"""

from __future__ import annotations

from rich.console import Console

PIPE_WIDTH = 400


def stdout_console() -> Console:
    """A console on stdout, as wide as the terminal, or PIPE_WIDTH when stdout is not one."""
    console = Console()
    if not console.is_terminal:
        console = Console(width=PIPE_WIDTH)
    return console
