"""`strait failover`: move a group to the target through the translator (write its translated offsets there)."""

from __future__ import annotations

import json
from typing import Annotated, Any
from urllib.parse import quote

import typer
from rich.table import Table

from services.cli.console import stdout_console
from services.cli.errors import one_line_errors
from services.cli.options import TRANSLATOR_ENV, GroupOption, JsonOption, SourceOption, TargetOption, TokenOption
from services.cli.translator_client import TranslatorClient


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
        group: GroupOption,
        source: SourceOption,
        target: TargetOption,
        translator: Annotated[str, typer.Option("--translator", envvar=TRANSLATOR_ENV, help="offset translator URL")],
        token: TokenOption = None,
        dry_run: Annotated[bool, typer.Option("--dry-run", help="show what would be written")] = False,
        allow_rewind: Annotated[
            bool, typer.Option("--allow-rewind", help="also move partitions where the group is further on the target")
        ] = False,
        as_json: JsonOption = False,
    ) -> None:
        """Write GROUP's translated offsets into the group on the target; refused while it has members there."""
        with one_line_errors(as_json):
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
