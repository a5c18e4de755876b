"""`strait validate-config`: a malformed file gets one line naming the problem and exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

GOOD = "clusters=A,B\nA.bootstrap.servers=127.0.0.1:9092\nB.bootstrap.servers=127.0.0.1:9093\nA->B.enabled=true\n"


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "services.cli", *args], capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (GOOD.replace("A->B.enabled=true", "A->B.enabled=maybe"), "A->B.enabled='maybe': expected true or false"),
        (GOOD + "A->C.enabled=true\n", "unknown cluster alias 'C'"),
        (GOOD.replace("B.bootstrap.servers=127.0.0.1:9093\n", ""), "B.bootstrap.servers"),
        (GOOD + "A->B.offset.lag.max=lots\n", "A->B.offset.lag.max='lots'"),
        (GOOD + "A->B.topics=orders[\n", "A->B.topics"),
    ],
)
def test_malformed_files_fail_with_one_line(tmp_path: Path, text: str, expected: str) -> None:
    lines = invalid_lines(tmp_path, text)
    assert len(lines) == 1, lines
    assert expected in lines[0]


def invalid_lines(tmp_path: Path, text: str) -> list[str]:
    """The lines `validate-config` prints for a file holding `text`, which it must refuse (exit 2, no traceback)."""
    config = tmp_path / "mm2.properties"
    config.write_text(text)
    result = run_cli("validate-config", str(config))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    return result.stderr.strip().splitlines()


def test_missing_file_is_named(tmp_path: Path) -> None:
    result = run_cli("validate-config", str(tmp_path / "absent.properties"))
    assert result.returncode == 2
    assert "absent.properties" in result.stderr


def test_valid_file_summary_as_json(tmp_path: Path) -> None:
    config = tmp_path / "mm2.properties"
    config.write_text(GOOD + "A->B.topics=orders.*, payments\n")
    result = run_cli("validate-config", str(config), "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    flows = {flow["flow"]: flow for flow in summary["flows"]}
    assert flows["A->B"]["enabled"] is True
    assert flows["A->B"]["topics"] == ["orders.*", "payments"]
    assert flows["B->A"]["enabled"] is False


def test_keys_set_twice_are_named_with_their_lines_and_the_last_wins(tmp_path: Path) -> None:
    config = tmp_path / "mm2.properties"
    config.write_text(GOOD + "A->B.topics=orders\n# again, later\nA->B.topics=payments\n")
    as_json = run_cli("validate-config", str(config), "--json")
    assert as_json.returncode == 0, as_json.stderr
    summary = json.loads(as_json.stdout)
    assert summary["duplicate_keys"] == {"A->B.topics": [5, 7]}
    assert summary["flows"][0]["topics"] == ["payments"], "as in Java's Properties, the last setting wins"
    table = run_cli("validate-config", str(config))
    assert "keys set more than once (the last one wins, as in MM2): A->B.topics (lines 5, 7)" in table.stdout


def test_a_piped_table_is_not_cut_at_80_columns(tmp_path: Path) -> None:
    topics = ",".join(f"a-rather-long-topic-name-{index}" for index in range(6))
    config = tmp_path / "mm2.properties"
    config.write_text(GOOD + f"A->B.topics={topics}\n")
    result = run_cli("validate-config", str(config))  # stdout is a pipe here
    assert result.returncode == 0, result.stderr
    assert topics.replace(",", ", ") in result.stdout


THREE_MISTAKES = (
    GOOD
    + "refresh.topics.interval.secods=3\n"  # a typo
    + "A->B.topics=[orders\n"  # a regex that does not compile
    + "tasks.max=many\n"  # not a number
)


def test_every_mistake_of_a_file_is_named_on_its_own_line_not_only_the_first(tmp_path: Path) -> None:
    lines = invalid_lines(tmp_path, THREE_MISTAKES)
    assert len(lines) == 3, lines
    assert "'refresh.topics.interval.secods' (did you mean 'refresh.topics.interval.seconds'?)" in lines[0]
    assert "A->B.topics='[orders'" in lines[1]
    assert "tasks.max='many'" in lines[2]


def test_under_json_every_mistake_is_in_the_errors_list(tmp_path: Path) -> None:
    config = tmp_path / "mm2.properties"
    config.write_text(THREE_MISTAKES)
    result = run_cli("validate-config", str(config), "--json")
    assert result.returncode == 2
    report = json.loads(result.stderr)
    assert report["exit_code"] == 2
    assert len(report["errors"]) == 3
    assert report["error"] == report["errors"][0]


def test_a_required_key_left_out_by_the_search_is_not_reported_as_a_second_mistake(tmp_path: Path) -> None:
    """A malformed value of a required key is the one mistake: its absence, once left out, is not another."""
    lines = invalid_lines(tmp_path, GOOD.replace("127.0.0.1:9093", "127.0.0.1:x"))
    assert len(lines) == 1, lines
    assert "B.bootstrap.servers='127.0.0.1:x'" in lines[0]
