"""The `strait` command's sub-commands; each is a thin layer over the shared library or a service's API."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from services.cli import demo, failover, migrate, status, translate, verify
from shared.config import MirrorMakerConfig, load_mm2_config
from shared.errors import ConfigError
from shared.observability import configure_logging

app = typer.Typer(no_args_is_help=True, add_completion=False, help="Operate Strait replication flows.")
err = Console(stderr=True)
out = Console()


@app.callback()
def _root() -> None:
    """Operate Strait replication flows."""
    # Library warnings (e.g. a skipped malformed status record) go to stderr: stdout is the command's output.
    configure_logging("strait-cli", level="WARNING", stream=sys.stderr)


@app.command("validate-config")
def validate_config(
    path: Annotated[Path, typer.Argument(help="MM2-format properties file")],
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
) -> None:
    """Check a config file the way every service will read it; exit 2 with one line if it is wrong."""
    try:
        config = load_mm2_config(path)
    except ConfigError as exc:
        # The message quotes the user's keys and values: never read them as rich markup or emoji codes.
        err.print(f"[red]invalid[/red] {escape(f'{path}: {exc}')}", highlight=False, soft_wrap=True, emoji=False)
        raise typer.Exit(2) from None
    summary = config_summary(config)
    flows: list[dict[str, Any]] = summary["flows"]
    ignored: list[str] = summary["ignored_keys"]
    if as_json:
        print(json.dumps(summary, indent=2))
        return
    table = Table(title=f"{path}: valid", show_lines=False)
    for column in ("flow", "enabled", "topics", "exclude", "policy", "offset syncs", "exactly once"):
        table.add_column(column)
    for flow in flows:
        table.add_row(
            flow["flow"],
            "yes" if flow["enabled"] else "no",
            ", ".join(flow["topics"]),
            ", ".join(flow["topics_exclude"]),
            flow["replication_policy"],
            flow["offset_syncs_topic_location"],
            "yes" if flow["exactly_once"] else "no",
        )
    out.print(table)
    if ignored:
        out.print(f"keys accepted but not used by Strait: {', '.join(ignored)}")


def config_summary(config: MirrorMakerConfig) -> dict[str, Any]:
    """What a config means, as plain data (no secrets)."""
    return {
        "clusters": {alias: cluster.bootstrap_servers for alias, cluster in config.clusters.items()},
        "flows": [
            {
                "flow": flow.name,
                "enabled": flow.enabled,
                "topics": list(flow.settings.topics),
                "topics_exclude": list(flow.settings.topics_exclude),
                "replication_policy": flow.settings.replication_policy_class,
                "offset_syncs_topic_location": flow.settings.offset_syncs_topic_location,
                "exactly_once": flow.settings.exactly_once_enabled,
            }
            for flow in config.flows
        ],
        "ignored_keys": sorted(config.ignored_keys),
    }


for _commands in (status, translate, failover, migrate, demo, verify):
    _commands.register(app)
