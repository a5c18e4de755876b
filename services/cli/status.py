"""`strait status`: a table per flow (instances, state, topics, records behind, heartbeat age, errors)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from typing import Annotated

import typer
from rich.console import Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text

from services.cli.console import stdout_console
from services.cli.errors import EXIT_UNHEALTHY, CliError, one_line_errors, quiet_client_logs, require
from services.cli.options import ConfigOption, JsonOption, TokenOption, TranslatorOption
from services.cli.translator_client import TranslatorClient
from shared.clock_skew import AheadLog, too_far_ahead
from shared.config import FlowConfig, load_mm2_config
from shared.control import read_statuses
from shared.control.events import ServiceStatus, now_ms
from shared.errors import CodecError, KafkaOperationError, StraitError
from shared.flow_context import FlowContext
from shared.flow_selection import selected_flows
from shared.flow_status import STALE_AFTER_S_DEFAULT, FlowStatus, summarize_flow
from shared.kafka.partition_reader import last_record
from shared.records.heartbeat import Heartbeat

_STATE_STYLE = {
    "running": "green",
    "starting": "cyan",
    "paused": "yellow",
    "degraded": "yellow",
    "failed": "red",
    "stopped": "dim",
    "unknown": "dim",
}

HEALTHY_STATES = ("running", "starting")
Fetch = Callable[[], list[FlowStatus]]
_AHEAD = AheadLog()  # once per flow a minute, also under --watch


def _heartbeat_ms(flow: FlowConfig, timeout_s: float) -> int | None:
    """Timestamp of the newest heartbeat mirrored into the flow's target, or None (also for one stamped too far
    ahead of this clock to be believed: it would show a stalled flow as live)."""
    topic = FlowContext.of(flow).topics.remote_heartbeats_topic
    record = last_record(flow.target_consumer_props(), topic, timeout_s=timeout_s)
    if record is None or record.key is None or record.value is None:
        return None
    try:
        timestamp_ms = Heartbeat.decode(record.key, record.value).timestamp_ms
    except CodecError:
        return None
    now = now_ms()
    if too_far_ahead(timestamp_ms, now):
        _AHEAD.warn("heartbeats", timestamp_ms, now, flow=flow.name)
        return None
    return timestamp_ms


def statuses_from_clusters(
    flows: tuple[FlowConfig, ...], stale_after_s: float, timeout_s: float = 10
) -> list[FlowStatus]:
    """Read `strait.status.internal` (and the mirrored heartbeats) on each flow's target cluster directly."""
    per_target: dict[str, list[ServiceStatus]] = {}
    heartbeats: dict[str, int | None] = {}
    for flow in flows:
        try:
            with quiet_client_logs():
                if flow.target not in per_target:
                    statuses = read_statuses(flow.target_consumer_props(), timeout_s=timeout_s)
                    per_target[flow.target] = list(statuses.values())
                heartbeats[flow.name] = _heartbeat_ms(flow, timeout_s)
        except KafkaOperationError as exc:  # a failed read (unreachable, refused): name the flow and the cluster
            raise CliError(f"reading the status of {flow.name} on cluster {flow.target}: {exc}") from exc
        except StraitError:
            raise
        except Exception as exc:  # the client's own errors (a timeout, an unreachable broker), said in one line
            raise CliError(f"reading the status of {flow.name} on cluster {flow.target}: {exc}") from exc
    now = now_ms()
    return [
        summarize_flow(
            flow.source,
            flow.target,
            per_target[flow.target],
            now_ms=now,
            heartbeat_ts_ms=heartbeats[flow.name],
            stale_after_s=stale_after_s,
        )
        for flow in flows
    ]


def statuses_from_translator(client: TranslatorClient, flows: str | None) -> list[FlowStatus]:
    """The translator's `/v1/status`, optionally narrowed to the flows named in `flows`."""
    report = client.get("/v1/status")
    statuses = [FlowStatus.model_validate(flow) for flow in report.get("flows", [])]
    names = {name.strip().replace(" ", "") for name in (flows or "").split(",") if name.strip()}
    unknown = names - {status.flow for status in statuses}
    if unknown:
        raise CliError(f"the translator does not serve flow {sorted(unknown)[0]}")
    return [status for status in statuses if not names or status.flow in names]


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds:.1f}s" if seconds < 120 else f"{seconds / 60:.0f}m"


def _number(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _clock(ts_ms: int) -> str:
    return datetime.fromtimestamp(ts_ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def recovery_point(status: FlowStatus) -> Text:
    """What a failover now would leave behind, and whether the flow is failed over."""
    line = Text()
    rpo = status.rpo
    if rpo is not None:
        style = "green" if rpo.records == 0 else "yellow"
        line.append(f"RPO {rpo.records:,} records, {_age(rpo.seconds)}", style)
        if rpo.source_reachable is False and rpo.as_of_ms is not None:
            line.append(f" (last known: the source has not answered since {_clock(rpo.as_of_ms)})", "yellow")
    if status.groups_behind:
        line.append(f"{'  ' if line else ''}groups with an older checkpoint than their commit: ", "yellow")
        line.append(f"{status.groups_behind} (up to {_age(status.group_rpo_max_s)})", "yellow")
    if status.dr_state == "failed-over":
        since = f" since {_clock(status.dr_since_ts)}" if status.dr_since_ts else ""
        line.append(f"{'  ' if line else ''}failed over{since} (report {status.dr_report_id})", "bold yellow")
    return line


def render_flow(status: FlowStatus) -> RenderableType:
    """One flow: a title with its totals and recovery point, a row per instance, then stalled partitions."""
    style = _STATE_STYLE.get(status.state, "")
    title = Text.assemble(
        (status.flow, "bold"),
        "  ",
        (status.state, style),
        f"  topics {_number(status.topics)}  records behind {_number(status.records_behind)}"
        f"  heartbeat age {_age(status.heartbeat_age_s)}",
    )
    if point := recovery_point(status):
        title.append("\n")
        title.append_text(point)
    table = Table(title=title, title_justify="left", expand=False)
    for column in ("service", "instance", "state", "reported", "topics", "records behind", "last error"):
        table.add_column(column)
    for instance in status.instances:
        state = f"{instance.state} (stale)" if instance.stale else instance.state
        ahead = instance.clock_ahead_s
        reported = f"{_age(instance.age_s)} ago" if ahead is None else f"{_age(ahead)} ahead of this clock"
        table.add_row(
            instance.service,
            instance.instance,
            Text(state, _STATE_STYLE.get(instance.state, "")),
            reported,
            _number(instance.topics),
            _number(instance.records_behind),
            instance.last_error or "",
        )
    if not status.instances:
        table.add_row("-", "no status records", "-", "-", "-", "-", "")
    parts: list[RenderableType] = [table]
    if status.stalled_partitions:
        parts.append(Text(f"stalled: {', '.join(status.stalled_partitions)}", "yellow"))
    return Group(*parts)


def healthy(status: FlowStatus) -> bool:
    """Running or starting, with no partition stalled: what `strait status` exits 0 for."""
    return status.state in HEALTHY_STATES and not status.stalled_partitions


def render(statuses: list[FlowStatus]) -> RenderableType:
    """Every flow's table."""
    return Group(*(render_flow(status) for status in statuses))


def register(app: typer.Typer) -> None:
    """Add `status` to the `strait` command."""

    @app.command("status")
    def status(
        config: ConfigOption = None,
        translator: TranslatorOption = None,
        token: TokenOption = None,
        flows: Annotated[str | None, typer.Option("--flows", help="comma list of flows, e.g. A->B")] = None,
        watch: Annotated[bool, typer.Option("--watch", help="refresh in place until Ctrl-C")] = False,
        interval_s: Annotated[float, typer.Option("--interval", min=0.2, help="seconds between refreshes")] = 2.0,
        refreshes: Annotated[int, typer.Option("--refreshes", min=0, help="with --watch: stop after N (0: never)")] = 0,
        stale_after_s: Annotated[float, typer.Option("--stale-after", min=1, help="seconds")] = STALE_AFTER_S_DEFAULT,
        timeout_s: Annotated[float, typer.Option("--timeout", min=0.1, help="seconds per cluster read")] = 10.0,
        as_json: JsonOption = False,
    ) -> None:
        """Replication status per flow, read from strait.status.internal on each target (or from --translator).

        Exit 0 when every flow is running (or starting) with no stalled partition, 3 when one is not (the status is
        printed either way), 1 when it could not be read, 2 on a usage or config error."""
        with one_line_errors(as_json):
            fetch: Fetch
            if translator is None:
                require(config, "give --config FILE (or --translator URL)")
                assert config is not None
                served = selected_flows(load_mm2_config(config), flows, require_enabled=False)
                fetch = partial(statuses_from_clusters, served, stale_after_s, timeout_s)
            else:
                fetch = partial(statuses_from_translator, TranslatorClient(translator, token=token), flows)

            if watch:
                _watch(fetch, interval_s, refreshes)
                return
            statuses = fetch()
            if as_json:
                print(json.dumps({"flows": [s.model_dump(mode="json") for s in statuses]}, indent=2))
            else:
                stdout_console().print(render(statuses))
        if any(not healthy(s) for s in statuses):
            raise typer.Exit(EXIT_UNHEALTHY)


def _watch(fetch: Fetch, interval_s: float, refreshes: int) -> None:
    """Redraw in place every `interval_s` until Ctrl-C or `refreshes` redraws."""
    done = 0
    try:
        with Live(render(fetch()), refresh_per_second=4, console=stdout_console()) as live:
            done = 1
            while refreshes == 0 or done < refreshes:
                time.sleep(interval_s)
                live.update(render(fetch()))
                done += 1
    except KeyboardInterrupt:
        return
