"""`strait verify`'s time options and its table: what an operator types and reads."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from rich.console import Console

from services.cli.errors import CliError
from services.cli.verify import parse_time_ms, render
from shared.verify.findings import AlteredRecord, OffsetRange, PartitionFindings, VerifyTotals
from shared.verify.flow_check import FlowVerification


def test_times_are_epoch_milliseconds_or_iso_8601_in_utc_unless_they_say_otherwise() -> None:
    assert parse_time_ms("1700000000000", "--since") == 1_700_000_000_000
    assert parse_time_ms("2023-11-14T22:13:20Z", "--since") == 1_700_000_000_000
    assert parse_time_ms("2023-11-14T22:13:20", "--since") == 1_700_000_000_000
    assert parse_time_ms("2023-11-15T00:13:20+02:00", "--until") == 1_700_000_000_000
    assert parse_time_ms(None, "--since") is None


def test_a_time_that_is_neither_names_the_option_and_is_a_usage_error() -> None:
    with pytest.raises(CliError) as caught:
        parse_time_ms("last tuesday", "--until")
    assert caught.value.code == 2
    assert "--until 'last tuesday'" in caught.value.message


def test_the_table_names_lost_ranges_and_altered_offsets() -> None:
    finding = PartitionFindings(
        "orders", 3, "A.orders", 0, 500, 0, 470, verified=469,
        missing=[OffsetRange(100, 129, 30)], missing_records=30,
        altered=[AlteredRecord(300, 270)], altered_records=1,
    )  # fmt: skip
    totals = VerifyTotals.of([finding], records_read=970, cpu_s=0.5, wall_s=1.0)
    console = Console(width=250, record=True)
    console.print(render(FlowVerification("A->B", [finding], totals)))
    text = console.export_text()
    assert "LOST" in text
    assert "missing at 100-129" in text
    assert "altered (source->target) 300->270" in text


def test_records_from_no_source_make_the_title_say_so_and_verify_exit_4(monkeypatch: pytest.MonkeyPatch) -> None:
    import typer
    from typer.testing import CliRunner

    from services.cli import verify as verify_module

    finding = PartitionFindings(
        "orders", 0, "A.orders", 0, 100, 0, 101, verified=100, unexpected=1, unexpected_offsets=[100]
    )
    result = FlowVerification("A->B", [finding], VerifyTotals.of([finding], records_read=201, cpu_s=0.1, wall_s=0.1))
    monkeypatch.setattr(verify_module, "load_mm2_config", lambda _path: None)
    monkeypatch.setattr(verify_module, "selected_flows", lambda *_a, **_k: [SimpleNamespace(transforms=())])
    monkeypatch.setattr(verify_module, "verify_flow", lambda _flow, _scope: result)
    app = typer.Typer()
    verify_module.register(app)
    app.command("other")(lambda: None)  # two commands: `verify` is named on the command line
    ran = CliRunner().invoke(app, ["verify", "--config", "mm2.properties"], env={"COLUMNS": "250"})
    assert ran.exit_code == 4, ran.output
    assert "UNEXPECTED" in ran.output
    assert "unexpected 1" in ran.output
    assert "unexpected at target 100" in ran.output
