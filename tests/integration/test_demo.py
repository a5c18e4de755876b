"""`strait demo` run as a user runs it: clusters and services start, sample records reach the target, and
nothing the demo started is left running afterwards."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from shared.localkafka.jars import REPO_ROOT

SAMPLE_TOPICS = {"orders", "payments", "clicks"}  # the topics of deploy/config/local-two-cluster.properties


def processes_carrying(marker: bytes) -> list[str]:
    """Live processes whose environment holds `marker`: everything the demo started inherits it."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker in (entry / "environ").read_bytes():
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                found.append(f"{entry.name}: {command[:200]}")
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found


@pytest.mark.slow
def test_demo_mirrors_the_sample_topics_and_leaves_nothing_running(kafka_runtime: str) -> None:
    run_id = uuid.uuid4().hex
    env = {**os.environ, "STRAIT_DEMO_TEST_RUN": run_id}
    result = subprocess.run(
        [sys.executable, "-m", "services.cli", "demo", "--duration", "20", "--no-live", "--keep-logs"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=540,
    )
    output = result.stdout + result.stderr
    left = processes_carrying(f"STRAIT_DEMO_TEST_RUN={run_id}".encode())

    assert result.returncode == 0, output[-6000:]
    for service in ("topic-sync", "acl-sync", "heartbeat", "checkpoint", "offset-translator", "data-mirror"):
        assert re.search(rf"{service} +ready after", output), f"{service} never became ready:\n{output[-6000:]}"
    mirrored = {
        topic: int(count.replace(",", ""))
        for topic, count in re.findall(r"A->B (\w+) -> A\.\1: ([\d,]+) records mirrored", result.stdout)
    }
    assert set(mirrored) == SAMPLE_TOPICS, output[-6000:]
    assert all(count > 0 for count in mirrored.values()), mirrored
    flow_totals = re.findall(r"A->B \w+: topics [\d,-]+, records mirrored ([\d,]+)", result.stdout)
    assert flow_totals, "the status view never showed records mirrored for A->B"
    assert int(flow_totals[-1].replace(",", "")) > 0
    assert re.search(r"cockpit: http://127\.0\.0\.1:\d+/ui/ ", result.stdout), "the demo names the cockpit's URL"
    raw = [line for line in output.splitlines() if re.match(r"%\d\|", line)]
    assert raw == [], f"librdkafka's own lines reached the demo's console: {raw[:3]}"
    assert "stopped; nothing left running" in result.stdout
    assert left == [], f"processes the demo started are still alive: {left}"
    kept = re.search(r"logs and config kept in (\S+)", result.stdout)
    assert kept, result.stdout[-3000:]
    try:
        logs = sorted((Path(kept.group(1)) / "logs").glob("*.log"))
        assert {log.stem for log in logs} >= {"data-mirror", "checkpoint", "topic-sync"}, logs
        for log in logs:
            assert_one_json_stream(log)
    finally:
        shutil.rmtree(kept.group(1), ignore_errors=True)


def assert_one_json_stream(log: Path) -> None:
    """Every line is a JSON event of the service (Spark's JVM and librdkafka included), and a default config
    warns about no client setting the user never wrote."""
    for number, line in enumerate(log.read_text().splitlines(), 1):
        try:
            event = json.loads(line)
        except ValueError:
            raise AssertionError(f"{log.name}:{number} is not JSON: {line[:300]}") from None
        assert isinstance(event, dict), f"{log.name}:{number}: {line[:300]}"
        assert event.get("service", "").startswith("strait-"), f"{log.name}:{number}: {line[:300]}"
        assert event["event"] != "client_settings_ignored", f"{log.name}:{number}: {line[:300]}"
        assert event.get("facility") != "CONFWARN", f"{log.name}:{number}: {line[:300]}"
