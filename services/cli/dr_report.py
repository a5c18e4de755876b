"""A DR report (failover, failback, or a dry run's plan) as the tables an operator reads."""

from __future__ import annotations

from datetime import UTC, datetime

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from shared.dr.records import DrReport, RpoSummary

ROWS = 50  # rows per table; the counts in the titles are always complete


def _when(ms: int | None) -> str:
    return "-" if ms is None else datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}s"


def _answered(reachable: bool | None) -> str:
    return "answered" if reachable else "did not answer" if reachable is False else "not asked"


def rpo_table(rpo: RpoSummary, title: str) -> Table:
    """Records and seconds behind per topic (most behind first)."""
    table = Table(title=title, title_justify="left")
    for column in ("topic", "records behind", "oldest not copied", "partitions behind"):
        table.add_column(column, justify="left" if column == "topic" else "right")
    for topic in rpo.topics[:ROWS]:
        table.add_row(topic.topic, f"{topic.records:,}", _seconds(topic.seconds), str(topic.partitions_behind))
    return table


def render_report(report: DrReport) -> RenderableType:
    """Title with the outcome, then RPO, groups moved and skipped, the tail, producers and notes."""
    mode = "planned" if report.planned else "unplanned"
    what = "dry run, nothing changed" if report.dry_run else f"report {report.id}"
    took = (report.ended_ms or report.started_ms) - report.started_ms
    parts: list[RenderableType] = [
        Text(f"{report.kind} of {report.flow} ({mode}): {what}; {took / 1000:.1f}s", style="bold"),
    ]
    if report.rpo is not None:
        rpo = report.rpo
        style = "green" if rpo.records == 0 else "yellow"
        parts.append(
            Text(
                f"RPO {rpo.records:,} records, oldest {_seconds(rpo.seconds)} ({rpo.partitions_behind} of "
                f"{rpo.partitions} partitions behind; source {_answered(rpo.source_reachable)})",
                style=style,
            )
        )
        if rpo.records:
            parts.append(rpo_table(rpo, "left behind on the source, per topic"))
    moved = Table(title=f"groups moved: {len(report.groups_moved)}", title_justify="left")
    for column in ("group", "cluster", "topic", "partition", "previous", "offset", "action", "how"):
        moved.add_column(column, justify="right" if column in ("partition", "previous", "offset") else "left")
    rows = [(move, p) for move in report.groups_moved for p in move.partitions]
    for move, p in rows[:ROWS]:
        previous = "-" if p.previous_offset is None else str(p.previous_offset)
        moved.add_row(move.group, move.cluster, p.topic, str(p.partition), previous, str(p.offset), p.action, p.how)
    parts.append(moved)
    if report.groups_skipped:
        skipped = Table(title=f"groups not moved: {len(report.groups_skipped)}", title_justify="left")
        skipped.add_column("group")
        skipped.add_column("why")
        for entry in report.groups_skipped[:ROWS]:
            skipped.add_row(entry.group, entry.reason)
        parts.append(skipped)
    if report.tail:
        total = sum(t.records for t in report.tail)
        tail = Table(title=f"un-mirrored tail of the old primary: {total:,} offsets (kept there)", title_justify="left")
        for column in ("topic", "partition", "first", "end", "offsets", "for the groups"):
            tail.add_column(column)
        for t in report.tail[:ROWS]:
            choice = "delivered" if t.choice == "deliver" else "skipped"
            tail.add_row(t.topic, str(t.partition), str(t.first), str(t.end), f"{t.records:,}", choice)
        parts.append(tail)
    if report.copied_back is not None:
        parts.append(Text(f"records copied back from the other side: {report.copied_back:,}"))
    if report.producers:
        parts.append(Text(f"producers seen writing lately: {len(report.producers)}", style="yellow"))
    for note in report.notes:
        parts.append(Text(f"note: {note}"))
    parts.append(Text(f"started {_when(report.started_ms)} by {report.by or '-'}", style="dim"))
    return Group(*parts)
