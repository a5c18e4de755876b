"""`strait failover`: a whole flow (`--flow A->B`, from the config: services/cli/dr.py), or one group through the
translator (write its translated offsets on the target)."""

from __future__ import annotations

import json
from typing import Annotated, Any
from urllib.parse import quote

import typer
from rich.table import Table

from services.cli import dr
from services.cli.console import stdout_console
from services.cli.errors import CliError, one_line_errors
from services.cli.options import TRANSLATOR_ENV, ConfigOption, JsonOption, TokenOption
from services.cli.translator_client import TranslatorClient
from shared.dr.failover import FailoverOptions, who


def render_failover(result: dict[str, Any]) -> Table:
    """The failover's per-partition actions as a table, titled with what happened."""
    if result["dry_run"]:
        outcome = "dry run: nothing written"
    elif result["applied"]:
        outcome = "offsets written"
    else:
        outcome = "nothing to change"
    table = Table(
        title=f"failover of group {result['group']} {result['source']} -> {result['target']}: {outcome}",
        title_justify="left",
    )
    for column in ("topic", "partition", "offset", "previous offset", "action"):
        table.add_column(column, justify="left" if column in ("topic", "action") else "right")
    for row in result["partitions"]:
        previous = row["previous_offset"]
        table.add_row(
            row["topic"],
            str(row["partition"]),
            str(row["offset"]),
            "-" if previous is None else str(previous),
            row["action"],
        )
    return table


def register(app: typer.Typer) -> None:
    """Add `failover` to the `strait` command."""

    @app.command("failover")
    def failover(
        flow: Annotated[str | None, typer.Option("--flow", help="fail the whole flow over, e.g. A->B")] = None,
        config: ConfigOption = None,
        group: Annotated[str | None, typer.Option("--group", help="one consumer group (through --translator)")] = None,
        source: Annotated[str | None, typer.Option("--from", help="with --group: the cluster it consumed")] = None,
        target: Annotated[str | None, typer.Option("--to", help="with --group: the cluster it moves to")] = None,
        translator: Annotated[
            str | None, typer.Option("--translator", envvar=TRANSLATOR_ENV, help="offset translator URL")
        ] = None,
        token: TokenOption = None,
        dry_run: Annotated[
            bool, typer.Option("--dry-run", help="read everything, change nothing, show the plan")
        ] = False,
        planned: Annotated[
            bool | None,
            typer.Option(
                "--planned/--unplanned",
                help="--flow: planned drains to RPO 0 and needs the source; unplanned goes on with what reached the "
                "target (default: planned when the source answers)",
            ),
        ] = None,
        timeout_s: dr.TimeoutOption = 120.0,
        groups: dr.GroupsOption = None,
        ignore_producers: dr.IgnoreProducersOption = False,
        producers_quiet_s: dr.QuietOption = 30.0,
        allow_rewind: Annotated[
            bool, typer.Option("--allow-rewind", help="also move partitions where the group is further on the target")
        ] = False,
        as_json: JsonOption = False,
    ) -> None:
        """Fail a flow over (--flow, from --config: stop it for good, move its groups, report the RPO), or write
        one group's translated offsets on the target (--group, through the translator; refused while it has members
        there)."""
        if flow is not None:
            options = FailoverOptions(
                planned=planned,
                dry_run=dry_run,
                timeout_s=timeout_s,
                groups=groups,
                ignore_producers=ignore_producers,
                producers_quiet_s=producers_quiet_s,
                allow_rewind=allow_rewind,
                by=who(),
            )
            dr.run_flow_failover(config, flow, options=options, as_json=as_json)
            return
        with one_line_errors(as_json):
            if group is None or source is None or target is None or translator is None:
                raise CliError("give --flow A->B (with --config), or --group, --from, --to and --translator", 2)
            client = TranslatorClient(translator, token=token)
            try:
                body = {"group": group, "dry_run": dry_run, "allow_rewind": allow_rewind}
                result = client.post(f"/v1/flows/{quote(source, safe='')}/{quote(target, safe='')}/failover", body)
            finally:
                client.close()
            if as_json:
                print(json.dumps(result, indent=2))
            else:
                stdout_console().print(render_failover(result))
