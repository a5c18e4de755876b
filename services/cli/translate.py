"""`strait translate`: where a group resumes on the target, via the translator or from the checkpoints topic."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import typer
from rich.table import Table

from services.cli.console import stdout_console
from services.cli.errors import CliError, one_line_errors, quiet_client_logs, require
from services.cli.options import (
    ConfigOption,
    GroupOption,
    JsonOption,
    SourceOption,
    TargetOption,
    TokenOption,
    TranslatorOption,
)
from services.cli.translator_client import TranslatorClient
from shared.config import FlowConfig, load_mm2_config
from shared.control.events import now_ms
from shared.errors import CodecError
from shared.flow_context import FlowContext
from shared.kafka.partition_reader import read_to_end
from shared.records.checkpoint import Checkpoint


def offsets_from_checkpoints(flow: FlowConfig, group: str) -> dict[str, Any]:
    """Read `<source>.checkpoints.internal` on the target to its end; the group's latest checkpoint per partition.

    The same answer, in the same shape, as the translator's `/v1/flows/{source}/{target}/offsets`.
    """
    topic = FlowContext.of(flow).topics.checkpoints_topic
    latest: dict[tuple[str, int], tuple[Checkpoint, int]] = {}
    with quiet_client_logs():
        records = read_to_end(flow.target_consumer_props(), topic, timeout_s=60)
    for record in records:
        if record.key is None or record.value is None:
            continue
        try:
            checkpoint = Checkpoint.decode(record.key, record.value)
        except CodecError:
            continue  # as MM2's reader: a record that does not decode is skipped
        if checkpoint.group == group:
            latest[(checkpoint.topic, checkpoint.partition)] = (checkpoint, record.timestamp_ms)
    if not latest:
        raise CliError(f"no checkpoint of group '{group}' in {topic} on {flow.target}")
    now = now_ms()
    return {
        "group": group,
        "source": flow.source,
        "target": flow.target,
        "checkpoints_topic": topic,
        "offsets": [
            {
                "topic": cp.topic,
                "partition": cp.partition,
                "offset": cp.downstream_offset,
                "upstream_offset": cp.upstream_offset,
                "metadata": cp.metadata,
                "checkpoint_age_ms": max(0, now - timestamp),
            }
            for (cp, timestamp) in (latest[key] for key in sorted(latest))
        ],
    }


def render_offsets(result: dict[str, Any]) -> Table:
    """The translated offsets as a table."""
    table = Table(
        title=f"group {result['group']}: {result['source']} -> {result['target']} ({result['checkpoints_topic']})",
        title_justify="left",
    )
    for column in ("topic", "partition", "offset", "upstream offset", "checkpoint age"):
        table.add_column(column, justify="left" if column == "topic" else "right")
    for row in result["offsets"]:
        table.add_row(
            row["topic"],
            str(row["partition"]),
            str(row["offset"]),
            str(row["upstream_offset"]),
            f"{row['checkpoint_age_ms'] / 1000:.1f}s",
        )
    return table


def register(app: typer.Typer) -> None:
    """Add `translate` to the `strait` command."""

    @app.command("translate")
    def translate(
        group: GroupOption,
        source: SourceOption,
        target: TargetOption,
        config: ConfigOption = None,
        translator: TranslatorOption = None,
        token: TokenOption = None,
        as_json: JsonOption = False,
    ) -> None:
        """Where GROUP resumes on the target: RemoteClusterUtils.translateOffsets over the checkpoints topic."""
        with one_line_errors(as_json):
            if translator is not None:
                client = TranslatorClient(translator, token=token)
                try:
                    result = client.get(
                        f"/v1/flows/{quote(source, safe='')}/{quote(target, safe='')}/offsets", group=group
                    )
                finally:
                    client.close()
            else:
                require(config, "give --config FILE (or --translator URL)")
                assert config is not None
                result = offsets_from_checkpoints(load_mm2_config(config).flow(source, target), group)
            if as_json:
                print(json.dumps(result, indent=2))
            else:
                stdout_console().print(render_offsets(result))
