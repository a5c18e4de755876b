"""Print a Section as plain text, for running one benchmark module on its own."""

from __future__ import annotations

import argparse
import tempfile
import textwrap
from collections.abc import Callable
from pathlib import Path

from benchmarks.model import BenchOptions, Section


def section_text(section: Section) -> str:
    """Title, method, settings, the table with aligned columns, and the notes."""
    widths = [max(len(cell) for cell in column) for column in zip(section.headers, *section.rows, strict=True)]

    def line(cells: list[str]) -> str:
        return " | ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True))

    parts = [f"== {section.title} ({section.key}) ==", textwrap.fill(section.method, 110), ""]
    parts += [f"  {key}: {value}" for key, value in section.settings.items()]
    parts += ["", line(section.headers), "-+-".join("-" * width for width in widths)]
    parts += [line(row) for row in section.rows]
    parts += ["", *(textwrap.fill(note, 110, initial_indent="* ", subsequent_indent="  ") for note in section.notes)]
    return "\n".join(parts)


def print_section(section: Section) -> None:
    """Print `section_text(section)`."""
    print(section_text(section), flush=True)


def run_standalone(run: Callable[[BenchOptions], Section], description: str | None) -> None:
    """Command-line entry of one section module: small sizes unless --full, then print the section."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--full", action="store_true", help="full sizes instead of the quick ones")
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="strait-bench-"))
    print_section(run(BenchOptions(workdir=workdir, quick=not args.full)))
