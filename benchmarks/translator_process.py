"""The offset-translator as a real process on a free port, and a wait until it answers for every flow."""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from shared.localkafka import HarnessError
from shared.localkafka.ports import free_port
from tests.support.service_process import ServiceProcess


def start_translator(config: Path, log_dir: Path) -> tuple[ServiceProcess, str]:
    """Start `strait-offset-translator --config FILE --port N` (as `python -m`); returns it and its base URL."""
    port = free_port()
    log_dir.mkdir(parents=True, exist_ok=True)
    process = ServiceProcess("offset_translator", config, log_dir, "--port", str(port)).start()
    return process, f"http://127.0.0.1:{port}"


def wait_ready(process: ServiceProcess, base_url: str, *, timeout_s: float = 180) -> float:
    """Block until /ready answers 200 (checkpoints and offset syncs read to their end); returns seconds waited."""
    started = time.monotonic()
    deadline = started + timeout_s
    with httpx.Client(base_url=base_url, timeout=5) as client:
        while time.monotonic() < deadline:
            if process.popen is not None and process.popen.poll() is not None:
                raise HarnessError(f"offset-translator exited ({process.popen.returncode}): {process.tail()}")
            try:
                if client.get("/ready").status_code == 200:
                    return time.monotonic() - started
            except httpx.TransportError:
                pass
            time.sleep(0.3)
    raise HarnessError(f"offset-translator not ready within {timeout_s}s: {process.tail()}")
