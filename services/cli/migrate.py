"""`strait migrate from-mm2|to-mm2`: hand the copy positions of every flow over between MM2 and Strait."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any

import typer
from rich.table import Table

from services.cli.console import stdout_console
from services.cli.errors import CliError, one_line_errors
from services.cli.migration.plan import Direction
from services.cli.migration.run import MigrationOptions, migrate, outcome_as_json
from services.cli.options import CONFIG_ENV
from shared.config import load_mm2_config
from shared.flow_selection import selected_flows

ConfigArg = Annotated[
    str, typer.Option("--config", envvar=CONFIG_ENV, help="MM2-format properties file (the one MM2 ran with)")
]
FlowsOption = Annotated[str, typer.Option("--flows", help="comma list of flows (default: every enabled flow)")]
DryRunOption = Annotated[bool, typer.Option("--dry-run", help="print the per-partition plan; write nothing")]
JsonFlag = Annotated[bool, typer.Option("--json", help="machine-readable output")]
SettleOption = Annotated[
    float, typer.Option("--settle-s", help="watch the stopping tool's positions this long: any move refuses")
]
GroupOption = Annotated[
    str | None, typer.Option("--mm2-group", help="MM2's Connect worker group (default: <source>-mm2)")
]
TopicOption = Annotated[
    str | None,
    typer.Option("--mm2-offsets-topic", help="MM2's Connect offsets topic (default: mm2-offsets.<source>.internal)"),
]


def render(result: dict[str, Any]) -> Table:
    """One flow's plan as a table, titled with its outcome."""
    if result["refused"]:
        outcome = "refused, nothing written"
    elif result["dry_run"]:
        outcome = "dry run, nothing written"
    else:
        outcome = f"{result['written']} positions written"
    table = Table(title=f"{result['direction']} {result['flow']}: {outcome}", title_justify="left")
    for column in ("topic", "partition", "source start", "source end", "MM2 next", "Strait next", "action"):
        table.add_column(column, justify="left" if column in ("topic", "action") else "right")
    for row in result["partitions"]:
        table.add_row(
            row["topic"],
            str(row["partition"]),
            str(row["source_log_start"]),
            str(row["source_log_end"]),
            "-" if row["mm2_next_offset"] is None else str(row["mm2_next_offset"]),
            "-" if row["strait_next_offset"] is None else str(row["strait_next_offset"]),
            row["action"] + (" (refused)" if row["problem"] else ""),
        )
    return table


def _run(
    direction: Direction,
    config: str,
    flows: str,
    dry_run: bool,
    as_json: bool,
    settle_s: float,
    mm2_group: str | None,
    mm2_offsets_topic: str | None,
) -> None:
    with one_line_errors(as_json):
        chosen = list(selected_flows(load_mm2_config(config), flows))
        options = MigrationOptions(direction, dry_run, settle_s, mm2_group, mm2_offsets_topic)
        outcomes = migrate(chosen, options)
        results = [{**outcome_as_json(outcome), "dry_run": dry_run} for outcome in outcomes]
        if as_json:
            print(json.dumps(results, indent=2))
        else:
            console = stdout_console()
            for result in results:
                console.print(render(result))
                for problem in result["problems"]:
                    console.print(f"  refused: {problem}", highlight=False, soft_wrap=True)
        problems = [problem for result in results for problem in result["problems"]]
        if problems:
            raise CliError(f"{direction} refused, nothing written: {problems[0]} ({len(problems)} problem(s) in all)")


SUMMARIES: dict[Direction, str] = {
    "from-mm2": "With MM2 stopped, write its copy positions as Strait's progress: data-mirror resumes where MM2 ended.",
    "to-mm2": "With data-mirror stopped, write Strait's progress as MM2's positions: MM2 resumes where Strait ended.",
}


def _command(direction: Direction) -> Callable[..., None]:
    def command(
        config: ConfigArg,
        flows: FlowsOption = "",
        dry_run: DryRunOption = False,
        as_json: JsonFlag = False,
        settle_s: SettleOption = 3.0,
        mm2_group: GroupOption = None,
        mm2_offsets_topic: TopicOption = None,
    ) -> None:
        _run(direction, config, flows, dry_run, as_json, settle_s, mm2_group, mm2_offsets_topic)

    command.__doc__ = SUMMARIES[direction]  # typer's help text
    return command


def register(app: typer.Typer) -> None:
    """Add `migrate from-mm2` and `migrate to-mm2` to the `strait` command."""
    migrate_app = typer.Typer(no_args_is_help=True, help="Hand copy positions over between MM2 and Strait, in place.")
    app.add_typer(migrate_app, name="migrate")
    for direction in SUMMARIES:
        migrate_app.command(direction)(_command(direction))
