"""`strait verify`: compare each source partition with its remote copy, record by record, and say what was lost.

Exit 0 when nothing was lost, 3 when any record is missing or altered, 4 when nothing was lost but the target holds
records no source record explains (another producer wrote into the mirror's topic: split brain); 1: could not
verify (a cluster could not be read, or a flow's transform failed on a record the mirror has copied), 2: bad config
(a Python transform that cannot be imported too). So a script can tell "lost data" and "foreign data" from "could
not look".
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Annotated

import typer
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from services.cli.console import stdout_console
from services.cli.errors import EXIT_FAILED, CliError, one_line_errors, quiet_client_logs, require
from services.cli.options import ConfigOption, JsonOption
from shared.config import load_mm2_config
from shared.flow_selection import selected_flows
from shared.reshape.python_transforms import check_functions
from shared.verify.align import WINDOW_DEFAULT
from shared.verify.findings import OffsetRange, PartitionFindings
from shared.verify.flow_check import FlowVerification, VerifyScope, verify_flow

EXIT_LOST = 3
EXIT_UNEXPECTED = 4
ROWS_SHOWN_ALWAYS = 50  # up to this many partitions every row is shown; beyond it only those with findings


def parse_time_ms(text: str | None, option: str) -> int | None:
    """Epoch milliseconds, or an ISO 8601 time (UTC unless it says otherwise); CliError naming the option."""
    if text is None:
        return None
    if text.isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise CliError(f"{option} {text!r} is neither epoch milliseconds nor an ISO 8601 time", 2) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def _ranges(ranges: list[OffsetRange], limit: int = 3) -> str:
    shown = [f"{r.first}" if r.first == r.last else f"{r.first}-{r.last}" for r in ranges[:limit]]
    return ", ".join(shown) + (f" (+{len(ranges) - limit} more)" if len(ranges) > limit else "")


def _has_findings(finding: PartitionFindings) -> bool:
    return bool(
        finding.lost
        or finding.duplicates
        or finding.unexpected
        or finding.expired_records
        or finding.source_gone
        or finding.not_verified
        or finding.transform_failure
    )


def _details(finding: PartitionFindings) -> str:
    parts = []
    if finding.not_verified:
        parts.append(f"not verified: {finding.not_verified}")
    if finding.missing:
        parts.append(f"missing at {_ranges(finding.missing)}")
    if finding.altered:
        pairs = ", ".join(f"{a.source_offset}->{a.target_offset}" for a in finding.altered[:3])
        parts.append(f"altered (source->target) {pairs}")
    if finding.expired:
        parts.append(f"expired at {_ranges(finding.expired)}")
    if finding.unexpected_offsets:
        parts.append(f"unexpected at target {', '.join(map(str, finding.unexpected_offsets[:3]))}")
    if finding.transform_failure:
        rest = f"{finding.unverified:,} not verified" if finding.unverified else "the mirror waits there too"
        parts.append(f"transform failed at {finding.transform_failure} ({rest})")
    if finding.returned:
        parts.append(f"{finding.returned:,} returned (came from the target: not copied)")
    if finding.target_own:
        parts.append(f"{finding.target_own:,} target records not the flow's copies (not compared)")
    return "; ".join(parts)


def render(result: FlowVerification) -> RenderableType:
    """A title with the totals, a row per partition (with findings, when there are many), then notes."""
    totals = result.totals
    verdict = (
        ("LOST", "red")
        if totals.lost
        else ("UNEXPECTED", "red")
        if totals.unexpected
        else ("NOT VERIFIED", "yellow")
        if totals.unverified
        else ("ok", "green")
    )
    rate = f"{totals.bytes_read / 2**20 / totals.cpu_s:.0f} MiB per CPU second" if totals.cpu_s > 0 else ""
    title = Text.assemble(
        (result.flow, "bold"),
        "  ",
        verdict,
        f"  partitions {totals.partitions}  verified {totals.verified:,}  missing {totals.missing:,}"
        f"  altered {totals.altered:,}  unexpected {totals.unexpected:,}"
        + (f"  dropped by the flow's transforms {totals.dropped:,}" if totals.dropped else "")
        + (f"  returned {totals.returned:,}" if totals.returned else "")
        + f"  read {totals.bytes_read / 2**20:,.1f} MiB in {totals.wall_s:.1f}s  {rate}",
    )
    table = Table(title=title, title_justify="left")
    for column in (
        "partition",
        "source range",
        "verified",
        "missing",
        "altered",
        "duplicates",
        "unexpected",
        "dropped",
        "expired",
        "source gone",
        "not yet copied",
        "details",
    ):
        table.add_column(column)
    show_all = len(result.findings) <= ROWS_SHOWN_ALWAYS
    for finding in result.findings:
        if not show_all and not _has_findings(finding):
            continue
        style = "red" if finding.lost else ("yellow" if finding.not_verified or finding.unverified else "")
        table.add_row(
            Text(f"{finding.topic}-{finding.partition}", style),
            f"{finding.source_from}-{finding.source_to}",
            f"{finding.verified:,}",
            f"{finding.missing_records:,}",
            f"{finding.altered_records:,}",
            f"{finding.duplicates:,}",
            f"{finding.unexpected:,}",
            f"{finding.dropped:,}",
            f"{finding.expired_records:,}",
            f"{finding.source_gone:,}",
            f"{finding.not_yet_copied:,}",
            _details(finding),
        )
    parts: list[RenderableType] = [table]
    parts.extend(Text(note, "dim") for note in result.notes)
    return Group(*parts)


def register(app: typer.Typer) -> None:
    """Add `verify` to the `strait` command."""

    @app.command("verify")
    def verify(
        config: ConfigOption = None,
        flows: Annotated[str | None, typer.Option("--flows", help="comma list of flows, e.g. A->B")] = None,
        topics: Annotated[str, typer.Option("--topics", help="regex over source topic names")] = "",
        from_offset: Annotated[int | None, typer.Option("--from-offset", min=0, help="first source offset")] = None,
        to_offset: Annotated[int | None, typer.Option("--to-offset", min=0, help="source offset to stop at")] = None,
        since: Annotated[str | None, typer.Option("--since", help="records at or after (ISO time or ms)")] = None,
        until: Annotated[str | None, typer.Option("--until", help="records before (ISO time or ms)")] = None,
        window: Annotated[
            int, typer.Option("--window", min=100, help="records read ahead to realign")
        ] = WINDOW_DEFAULT,
        timeout_s: Annotated[float, typer.Option("--timeout", min=1, help="seconds a read may stall")] = 60.0,
        as_json: JsonOption = False,
    ) -> None:
        """Compare each source partition with its remote copy record by record; exit 3 if any was lost, 4 if foreign."""
        with one_line_errors(as_json):
            require(config, "give --config FILE")
            assert config is not None
            scope = VerifyScope(
                topics=topics,
                from_offset=from_offset,
                to_offset=to_offset,
                since_ms=parse_time_ms(since, "--since"),
                until_ms=parse_time_ms(until, "--until"),
                window=window,
                timeout_s=timeout_s,
            )
            scope.topic_pattern()  # a bad regex is a usage error, before any cluster is read
            results: list[FlowVerification] = []
            chosen = selected_flows(load_mm2_config(config), flows, require_enabled=False)
            for flow in chosen:
                check_functions(flow.transforms)  # a Python transform verify cannot import: a config error
            for flow in chosen:
                try:
                    with quiet_client_logs():
                        results.append(verify_flow(flow, scope))
                except TimeoutError as exc:
                    raise CliError(f"verifying {flow.name}: {exc}") from exc
        if as_json:
            print(json.dumps({"flows": [result.as_json() for result in results]}, indent=2))
        else:
            stdout_console().print(Group(*(render(result) for result in results)))
        if any(result.totals.lost for result in results):
            raise typer.Exit(EXIT_LOST)
        if any(result.totals.unexpected for result in results):
            raise typer.Exit(EXIT_UNEXPECTED)
        if any(result.totals.unverified for result in results):
            raise typer.Exit(EXIT_FAILED)
