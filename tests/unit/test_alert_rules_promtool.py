"""The alert rules as Prometheus reads them: `promtool check rules`, then `promtool test rules` with series that
must fire each alert (and must not, before its `for`). promtool comes from Debian's prometheus package
(tests/support/promtool.py; scripts/test fetches it)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.support.promtool import install_promtool

RULES = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(install_promtool()), *args], cwd=RULES, capture_output=True, text=True, timeout=120, check=False
    )


def test_the_rules_file_is_valid() -> None:
    checked = _promtool("check", "rules", "alerts.yml")
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_each_alert_fires_on_the_series_it_is_for() -> None:
    tested = _promtool("test", "rules", "alerts.test.yml")
    assert tested.returncode == 0, tested.stdout + tested.stderr
