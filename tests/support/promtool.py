"""Prometheus's `promtool`, to check and unit-test the alert rules: taken from Debian's `prometheus` package
without installing it (`apt-get download` and `dpkg-deb -x`: no daemon is set up or started), kept in the
harness's cache once per machine."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from shared.localkafka import HarnessError
from shared.localkafka.jars import CACHE_DIR

PACKAGE = "prometheus"


def promtool_binary() -> Path:
    """Where the extracted promtool is kept."""
    return CACHE_DIR / "bin" / "promtool"


def install_promtool() -> Path:
    """promtool from PATH, else the cached one, else extracted from Debian's package (once)."""
    on_path = shutil.which("promtool")
    if on_path is not None:
        return Path(on_path)
    binary = promtool_binary()
    if binary.exists():
        return binary
    if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        raise HarnessError("promtool is missing and this machine has no apt-get/dpkg-deb to fetch Debian's package")
    with tempfile.TemporaryDirectory(prefix="strait-promtool-") as work:
        fetched = subprocess.run(
            ["apt-get", "download", PACKAGE], cwd=work, capture_output=True, text=True, timeout=600, check=False
        )
        debs = sorted(Path(work).glob(f"{PACKAGE}_*.deb"))
        if fetched.returncode != 0 or not debs:
            raise HarnessError(f"apt-get download {PACKAGE} failed: {fetched.stderr[-2000:]}")
        tree = Path(work) / "tree"
        subprocess.run(["dpkg-deb", "-x", str(debs[0]), str(tree)], check=True, timeout=300)
        binary.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(tree / "usr" / "bin" / "promtool", binary)
    return binary
