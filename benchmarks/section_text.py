"""Print a Section as plain text, for running one benchmark module on its own."""

from __future__ import annotations

import textwrap

from benchmarks.model import Section


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
