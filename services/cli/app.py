"""The `strait` command's sub-commands; each is a thin layer over the shared library or a service's API."""

from __future__ import annotations

import json
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from services.cli import demo, dr, failover, migrate, status, strimzi, translate, verify
from services.cli.console import stdout_console
from services.cli.errors import EXIT_CONFIG, CliError, one_line_errors
from services.cli.options import CONFIG_ENV
from shared.config import MirrorMakerConfig, load_mm2_config
from shared.config.all_errors import config_errors
from shared.config.properties import duplicate_keys, read_properties_text
from shared.observability import configure_logging

app = typer.Typer(no_args_is_help=True, help="Operate Strait replication flows.")
err = Console(stderr=True)
out = stdout_console()


def _print_version(asked: bool) -> None:
    if asked:
        print(f"strait {version('strait')}")
        raise typer.Exit()


@app.callback()
def _root(
    _version: Annotated[
        bool, typer.Option("--version", callback=_print_version, is_eager=True, help="print the version and exit")
    ] = False,
) -> None:
    """Operate Strait replication flows."""
    # Library warnings (e.g. a skipped malformed status record) go to stderr: stdout is the command's output.
    configure_logging("strait-cli", level="WARNING", stream=sys.stderr)


@app.command("validate-config")
def validate_config(
    path: Annotated[Path, typer.Argument(envvar=CONFIG_ENV, help="MM2-format properties file")],
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
) -> None:
    """Check a config file the way every service will read it; exit 2 with one line per problem if it is wrong."""
    errors = config_errors(path)
    if errors:
        lines = [f"{path}: {error}" for error in errors]
        if as_json:
            report = {"error": lines[0], "errors": lines, "exit_code": EXIT_CONFIG}
            print(json.dumps(report), file=sys.stderr, flush=True)
        for line in [] if as_json else lines:
            # The message quotes the user's keys and values: never read them as rich markup or emoji codes.
            err.print(f"[red]invalid[/red] {escape(line)}", highlight=False, soft_wrap=True, emoji=False)
        raise typer.Exit(EXIT_CONFIG)
    config = load_mm2_config(path)
    summary = config_summary(config)
    # Java's Properties (and so MM2) keep the last of a key set twice: valid, but rarely meant.
    summary["duplicate_keys"] = duplicate_keys(read_properties_text(str(path)), source=str(path))
    flows: list[dict[str, Any]] = summary["flows"]
    ignored: list[str] = summary["ignored_keys"]
    duplicates: dict[str, list[int]] = summary["duplicate_keys"]
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
        out.print(f"keys accepted but not used by Strait: {', '.join(ignored)}", markup=False)
    if duplicates:
        where = "; ".join(f"{key} (lines {', '.join(map(str, lines))})" for key, lines in duplicates.items())
        out.print(f"keys set more than once (the last one wins, as in MM2): {where}", markup=False)


@app.command("convert-strimzi")
def convert_strimzi(
    path: Annotated[Path, typer.Argument(help="a YAML file holding a KafkaMirrorMaker2 resource (v1beta2)")],
    out_path: Annotated[Path | None, typer.Option("--out", help="write the properties here (default: stdout)")] = None,
    secrets_dir: Annotated[
        str, typer.Option("--secrets-dir", help="where the pods mount each Secret, one directory per Secret")
    ] = strimzi.SECRETS_DIR,
) -> None:
    """Turn a Strimzi KafkaMirrorMaker2 resource into the MM2 properties file Strait reads; what has no Strait
    equivalent is listed on stderr (and in the file's header)."""
    with one_line_errors():
        try:
            text = path.read_text()
        except OSError as exc:
            raise CliError(f"cannot read {path}: {exc.strerror}", EXIT_CONFIG) from exc
        try:
            conversion = strimzi.convert(text, secrets_dir)
        except yaml.YAMLError as exc:
            raise CliError(f"{path} is not YAML: {' '.join(str(exc).split())}", EXIT_CONFIG) from exc
        if out_path is None:
            print(conversion.text(), end="")
        else:
            out_path.write_text(conversion.text())
        for item in conversion.not_converted:
            err.print(f"not converted: {item}", markup=False, highlight=False, soft_wrap=True)


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


for _commands in (status, translate, failover, dr, migrate, demo, verify):
    _commands.register(app)
