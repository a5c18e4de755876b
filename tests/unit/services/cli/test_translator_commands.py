"""`strait translate`, `strait failover` and `strait status` against a running translator; one-line errors."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from shared.control.codec import encode_event
from shared.control.events import ServiceStatus
from shared.kafka.follow import FollowedRecord
from shared.records import Checkpoint
from tests.unit.services.cli.conftest import TOKEN, Translator, run_cli


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def test_translate_through_the_translator(translator: Translator) -> None:
    translator.feed.checkpoints(
        [Checkpoint("orders-app", "A.orders", 0, 120, 110), Checkpoint("orders-app", "A.orders", 1, 60, 52, "m")]
    )
    translator.feed.loaded()
    args = ("translate", "--group", "orders-app", "--from", "A", "--to", "B", "--translator", translator.url)

    result = run_cli(*args, "--json")
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert [(o["topic"], o["partition"], o["offset"]) for o in answer["offsets"]] == [
        ("A.orders", 0, 110),
        ("A.orders", 1, 52),
    ]
    table = run_cli(*args)
    assert table.returncode == 0, table.stderr
    assert "A.orders" in table.stdout
    assert "110" in table.stdout
    assert "group orders-app" in table.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--group", "nobody", "--from", "A", "--to", "B"), "translator: 404 no checkpoint of group 'nobody'"),
        (("--group", "g", "--from", "A", "--to", "Z"), "translator: 404 unknown cluster 'Z'"),
    ],
)
def test_translate_errors_are_one_line(translator: Translator, args: tuple[str, ...], message: str) -> None:
    translator.feed.loaded()
    result = run_cli("translate", *args, "--translator", translator.url)
    assert result.returncode == 1
    assert message in one_line(result.stderr)


def test_failover_needs_the_token(translator: Translator) -> None:
    translator.feed.loaded()
    args = ("failover", "--group", "g", "--from", "A", "--to", "B", "--translator", translator.url, "--dry-run")
    missing = run_cli(*args, env={k: v for k, v in os.environ.items() if k != "STRAIT_TRANSLATOR_TOKEN"})
    assert missing.returncode == 1
    assert "translator: 401" in one_line(missing.stderr)
    # The token from the environment gets past auth; the group is unknown.
    with_env = run_cli(*args, env={**os.environ, "STRAIT_TRANSLATOR_TOKEN": TOKEN})
    assert with_env.returncode == 1
    assert "translator: 404 no checkpoint of group 'g'" in one_line(with_env.stderr)


def test_status_through_the_translator(translator: Translator) -> None:
    status = ServiceStatus(
        flow="A->B",
        service="data-mirror",
        instance="dm-7",
        state="running",
        ts=1_000_000 - 1000,
        details={"records_behind": 1234, "topics": 5},
    )
    translator.app.state.index.on_status_records("B", [FollowedRecord(0, b"dm-7", encode_event(status), 0)])
    result = run_cli("status", "--translator", translator.url, "--json")
    assert result.returncode == 0, result.stderr
    flows = json.loads(result.stdout)["flows"]
    assert flows[0]["flow"] == "A->B"
    assert flows[0]["records_behind"] == 1234
    assert flows[0]["instances"][0]["instance"] == "dm-7"

    table = run_cli("status", "--translator", translator.url)
    assert table.returncode == 0, table.stderr
    assert "A->B" in table.stdout
    assert "dm-7" in table.stdout
    assert "1,234" in table.stdout

    watched = run_cli("status", "--translator", translator.url, "--watch", "--interval", "0.2", "--refreshes", "2")
    assert watched.returncode == 0, watched.stderr
    assert "dm-7" in watched.stdout

    unknown = run_cli("status", "--translator", translator.url, "--flows", "B->A")
    assert unknown.returncode == 1
    assert "does not serve flow B->A" in one_line(unknown.stderr)


def test_unreachable_translator_is_one_line() -> None:
    result = run_cli("status", "--translator", "http://127.0.0.1:9")
    assert result.returncode == 1
    assert "cannot reach the translator at http://127.0.0.1:9" in one_line(result.stderr)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("translate", "--group", "g", "--from", "A", "--to", "B"), "give --config FILE (or --translator URL)"),
        (("status",), "give --config FILE (or --translator URL)"),
    ],
)
def test_missing_source_of_truth_is_a_usage_error(args: tuple[str, ...], message: str) -> None:
    result = run_cli(*args)
    assert result.returncode == 2
    assert message in one_line(result.stderr)


def test_bad_config_is_one_line_exit_2(tmp_path: Path) -> None:
    config = tmp_path / "mm2.properties"
    config.write_text("clusters=A,B\nA.bootstrap.servers=127.0.0.1:1\nB.bootstrap.servers=127.0.0.1:2\n")
    result = run_cli("status", "--config", str(config))
    assert result.returncode == 2
    assert "no enabled flow" in one_line(result.stderr)
    other = run_cli("translate", "--group", "g", "--from", "A", "--to", "Q", "--config", str(config))
    assert other.returncode == 2
    assert "unknown cluster alias 'Q'" in one_line(other.stderr)


def test_unreachable_cluster_is_one_line(tmp_path: Path) -> None:
    config = tmp_path / "mm2.properties"
    config.write_text(
        "clusters=A,B\nA.bootstrap.servers=127.0.0.1:1\nB.bootstrap.servers=127.0.0.1:2\nA->B.enabled=true\n"
    )
    result = run_cli("status", "--config", str(config), "--timeout", "1")
    assert result.returncode == 1
    assert "reading the status of A->B on cluster B" in one_line(result.stderr)
