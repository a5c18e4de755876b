"""What a platform team's scripts rely on: the config and translator from the environment (the cli image sets
STRAIT_CONFIG), `--version`, an exit code that says a flow is unhealthy, and errors a script can parse under --json."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from shared.control.codec import encode_event
from shared.control.events import ServiceStatus
from shared.control.status_reporter import State as ServiceState
from shared.kafka.follow import FollowedRecord
from tests.unit.services.cli.conftest import Translator, run_cli
from tests.unit.services.offset_translator.conftest import NOW_MS  # the translator's clock

GOOD = "clusters=A,B\nA.bootstrap.servers=127.0.0.1:9092\nB.bootstrap.servers=127.0.0.1:9093\nA->B.enabled=true\n"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("STRAIT_CONFIG", "STRAIT_TRANSLATOR_URL")}
    return {**env, **extra}


def _report(translator: Translator, state: ServiceState, **details: object) -> None:
    status = ServiceStatus(
        flow="A->B", service="data-mirror", instance="dm-1", state=state, ts=NOW_MS - 1000, details=details
    )
    translator.app.state.index.on_status_records("B", [FollowedRecord(0, b"dm-1", encode_event(status), 0)])


def test_version_is_printed() -> None:
    result = run_cli("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("strait ")
    assert result.stdout.split()[1][0].isdigit()


def test_the_config_comes_from_strait_config_when_not_given(tmp_path: Path) -> None:
    config = tmp_path / "mm2.properties"
    config.write_text(GOOD)
    valid = run_cli("validate-config", "--json", env=_env(STRAIT_CONFIG=str(config)))
    assert valid.returncode == 0, valid.stderr
    assert json.loads(valid.stdout)["flows"][0]["flow"] == "A->B"
    config.write_text(GOOD.replace("A->B.enabled=true", "A->B.enabled=false"))
    status = run_cli("status", env=_env(STRAIT_CONFIG=str(config)))
    assert status.returncode == 2
    assert "no enabled flow" in status.stderr


def test_the_translator_comes_from_strait_translator_url(translator: Translator) -> None:
    _report(translator, "running")
    result = run_cli("status", "--json", env=_env(STRAIT_TRANSLATOR_URL=translator.url))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["flows"][0]["instances"][0]["instance"] == "dm-1"


@pytest.mark.parametrize(
    ("state", "details", "code"),
    [
        ("running", {}, 0),
        ("failed", {"last_error": "target unreachable"}, 3),
        ("running", {"stalled_partitions": ["orders-3"]}, 3),
    ],
)
def test_status_exits_3_when_a_flow_is_not_healthy_and_still_prints_it(
    translator: Translator, state: ServiceState, details: dict[str, object], code: int
) -> None:
    _report(translator, state, **details)
    as_json = run_cli("status", "--translator", translator.url, "--json", env=_env())
    assert as_json.returncode == code, as_json.stderr
    assert json.loads(as_json.stdout)["flows"][0]["state"] == state
    table = run_cli("status", "--translator", translator.url, env=_env())
    assert table.returncode == code, table.stderr
    assert "dm-1" in table.stdout


def test_errors_under_json_are_one_json_object_on_stderr(tmp_path: Path) -> None:
    result = run_cli("status", "--translator", "http://127.0.0.1:9", "--json", env=_env())
    assert result.returncode == 1
    assert result.stdout == ""
    error = json.loads(result.stderr)
    assert error["exit_code"] == 1
    assert "cannot reach the translator at http://127.0.0.1:9" in error["error"]
    config = tmp_path / "mm2.properties"
    config.write_text(GOOD + "A->C.enabled=true\n")
    invalid = run_cli("validate-config", str(config), "--json", env=_env())
    assert invalid.returncode == 2
    assert "unknown cluster alias 'C'" in json.loads(invalid.stderr)["error"]
