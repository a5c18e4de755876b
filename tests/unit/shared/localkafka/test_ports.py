"""Ports for local clusters: a port the kernel offers again is not handed out twice while its holder lives."""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shared.localkafka import ports


class _Offers:
    """A socket whose bind(0) gets the next of `offered` ports, as the kernel may offer one port twice in a row."""

    def __init__(self, offered: Iterator[int]) -> None:
        self._offered = offered
        self._port = 0

    def __call__(self, *_args: Any) -> _Offers:
        return self

    def __enter__(self) -> _Offers:
        return self

    def __exit__(self, *_exc: object) -> None:
        return None

    def bind(self, _address: tuple[str, int]) -> None:
        self._port = next(self._offered)

    def getsockname(self) -> tuple[str, int]:
        return ("127.0.0.1", self._port)


@pytest.fixture
def marks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(ports, "MARKS", tmp_path)
    monkeypatch.setattr(ports, "_mine", [])
    return tmp_path


def test_a_port_offered_again_is_skipped_so_two_listeners_never_share_one(
    marks: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(socket, "socket", _Offers(iter([41000, 41000, 41000, 41001])))
    assert [ports.free_port(), ports.free_port()] == [41000, 41001]


def test_a_port_another_living_process_was_given_is_skipped_and_a_dead_ones_is_reused(
    marks: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = subprocess.Popen(["sleep", "30"])
    dead = subprocess.Popen(["true"])
    dead.wait()
    try:
        (marks / "41000").write_text(str(other.pid))
        (marks / "41001").write_text(str(dead.pid))
        monkeypatch.setattr(socket, "socket", _Offers(iter([41000, 41001])))
        assert ports.free_port() == 41001
        assert (marks / "41001").read_text() == str(os.getpid())
    finally:
        other.kill()
        other.wait()


def test_a_kernel_that_only_offers_held_ports_is_an_error_not_a_shared_port(
    marks: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (marks / "41000").write_text(str(os.getpid()))
    monkeypatch.setattr(socket, "socket", _Offers(iter([41000] * ports.TRIES)))
    with pytest.raises(OSError, match="no loopback port"):
        ports.free_port()
