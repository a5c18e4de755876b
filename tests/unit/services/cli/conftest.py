"""A real translator HTTP server (uvicorn in a thread) over an index fed with records, for the CLI to call."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import uvicorn
from fastapi import FastAPI

from shared.localkafka.ports import free_port
from tests.unit.services.offset_translator.conftest import Feed, build_app

TOKEN = "cli-test-token-0123"


@dataclass
class Translator:
    """The app, its index feed and its URL."""

    app: FastAPI
    feed: Feed
    url: str


@pytest.fixture
def translator() -> Iterator[Translator]:
    app = build_app(translator_token=TOKEN)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "the translator did not start"
        time.sleep(0.05)
    try:
        yield Translator(app, Feed(app.state.index), f"http://127.0.0.1:{port}")
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`strait ARGS` as an operator runs it."""
    return subprocess.run(
        [sys.executable, "-m", "services.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )
