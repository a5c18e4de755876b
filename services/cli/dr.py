"""`strait failover --flow`, `strait failback` and `strait dr check`: a flow's disaster recovery from the config file.

They talk to the clusters directly (the translator may be gone with the disaster); the translator offers the same
actions over HTTP. Exit 0 when done, 1 when refused or failed (one line says why; nothing was changed when refused),
2 on a usage or config error; `dr check` exits 3 when it found a problem.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

from services.cli.console import stdout_console
from services.cli.dr_report import render_report
from services.cli.errors import EXIT_UNHEALTHY, CliError, one_line_errors, quiet_client_logs
from services.cli.options import ConfigOption, JsonOption
from shared.config import FlowConfig, MirrorMakerConfig, load_mm2_config
from shared.dr.failback import FailbackOptions, fail_back
from shared.dr.failover import FailoverOptions, fail_over, who
from shared.dr.readiness import check_readiness
from shared.dr.records import DrReport

FlowOption = Annotated[str, typer.Option("--flow", help="the flow, e.g. A->B")]
DryRunOption = Annotated[bool, typer.Option("--dry-run", help="read everything, change nothing, print the plan")]
TimeoutOption = Annotated[
    float, typer.Option("--timeout", min=1, help="seconds to wait for the copy and checkpoints to drain")
]
GroupsOption = Annotated[str | None, typer.Option("--groups", help="only groups matching this regex")]
IgnoreProducersOption = Annotated[
    bool, typer.Option("--ignore-producers", help="go on although producers wrote to the old primary lately")
]
QuietOption = Annotated[
    float, typer.Option("--producers-quiet", min=0, help="seconds without a write for a producer to count as stopped")
]
RewindOption = Annotated[
    bool, typer.Option("--allow-rewind", help="also move partitions where a group already stands further")
]


def flow_and_reverse(config: MirrorMakerConfig, name: str) -> tuple[FlowConfig, FlowConfig | None]:
    """The named flow and, when enabled, its reverse (what a failback copies back through)."""
    flow = config.flow_named(name)
    reverse = config.flow(flow.target, flow.source)
    return flow, reverse if reverse.enabled else None


def _print(report: DrReport, as_json: bool) -> None:
    if as_json:
        print(report.model_dump_json(indent=2))
    else:
        stdout_console().print(render_report(report))


def run_flow_failover(
    config_path: object,
    flow_name: str,
    *,
    options: FailoverOptions,
    as_json: bool,
) -> None:
    """The `--flow` form of `strait failover` (app.py's `failover` command hands it over)."""
    with one_line_errors(as_json):
        if config_path is None:
            raise CliError("failover --flow needs --config FILE", 2)
        config = load_mm2_config(str(config_path))
        flow, reverse = flow_and_reverse(config, flow_name)
        with quiet_client_logs():
            report = fail_over(flow, options, reverse)
        _print(report, as_json)


def register(app: typer.Typer) -> None:
    """Add `failback` and `dr check` to the `strait` command (`failover --flow` lives with `failover`)."""

    @app.command("failback")
    def failback(
        flow: FlowOption,
        config: ConfigOption = None,
        tail: Annotated[
            str,
            typer.Option(
                "--tail",
                help="deliver: groups read the old primary's un-mirrored tail; skip: they go past it (kept either way)",
            ),
        ] = "deliver",
        dry_run: DryRunOption = False,
        timeout_s: TimeoutOption = 120.0,
        groups: GroupsOption = None,
        ignore_producers: IgnoreProducersOption = False,
        producers_quiet_s: QuietOption = 30.0,
        allow_rewind: RewindOption = False,
        as_json: JsonOption = False,
    ) -> None:
        """Bring a failed-over flow back: what was written on its target reaches its source through the reverse flow,
        the source's un-mirrored tail is reported (delivered or skipped), groups move back, the flow resumes."""
        with one_line_errors(as_json):
            if config is None:
                raise CliError("failback needs --config FILE", 2)
            if tail not in ("deliver", "skip"):
                raise CliError(f"--tail {tail!r}: expected deliver or skip", 2)
            loaded = load_mm2_config(config)
            forward, reverse = flow_and_reverse(loaded, flow)
            options = FailbackOptions(
                tail="deliver" if tail == "deliver" else "skip",
                dry_run=dry_run,
                timeout_s=timeout_s,
                groups=groups,
                ignore_producers=ignore_producers,
                producers_quiet_s=producers_quiet_s,
                allow_rewind=allow_rewind,
                by=who(),
            )
            with quiet_client_logs():
                report = fail_back(forward, reverse, options)
            _print(report, as_json)

    dr = typer.Typer(no_args_is_help=True, help="Disaster-recovery checks.")
    app.add_typer(dr, name="dr")

    @dr.command("check")
    def check(flow: FlowOption, config: ConfigOption = None, as_json: JsonOption = False) -> None:
        """Is the flow ready to fail over and back? Nothing moves; exit 3 with one line per problem."""
        with one_line_errors(as_json):
            if config is None:
                raise CliError("dr check needs --config FILE", 2)
            loaded = load_mm2_config(config)
            forward, reverse = flow_and_reverse(loaded, flow)
            with quiet_client_logs():
                problems = check_readiness(forward, reverse)
            if as_json:
                print(json.dumps({"flow": forward.name, "ready": not problems, "problems": problems}, indent=2))
            else:
                console = stdout_console()
                if not problems:
                    console.print(f"{forward.name}: ready to fail over and back", markup=False)
                for problem in problems:
                    console.print(f"{forward.name}: {problem}", markup=False, soft_wrap=True)
        if problems:
            raise typer.Exit(EXIT_UNHEALTHY)
