"""The fault proxy does to a connection what the network-fault tests say it does, checked on a plain TCP echo
server (no broker): added round trip, a black hole, resets, a link that is down, and healing."""

from __future__ import annotations

import socket
import socketserver
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from shared.localkafka.fault_proxy import FaultProxy, NetworkPath
from shared.localkafka.ports import free_port


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(4096):
            self.request.sendall(data)


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[NetworkPath, int]]:
    """An echo server behind the proxy: (its network path, the proxy's port)."""
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    proxy = FaultProxy(Path(tmp_path_factory.mktemp("proxy"))).start()
    listen = free_port()
    try:
        yield NetworkPath([proxy.link("echo", listen, server.server_address[1])]), listen
    finally:
        proxy.stop()
        server.shutdown()
        server.server_close()


def _round_trip(port: int, timeout_s: float = 5) -> float:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
        began = time.monotonic()
        sock.sendall(b"ping")
        assert sock.recv(4) == b"ping"
        return time.monotonic() - began


def _passes_everything(network: NetworkPath, port: int) -> bool:
    """Healed: no fault left on any link, and a new connection is answered. (Not how fast: a loaded machine
    takes its time, and a CI run once took 0.9 s for this echo.)"""
    _round_trip(port)
    return all(not link.toxics() for link in network.links)


def _ping(sock: socket.socket) -> None:
    """One echo on an open connection; a connection closed under it raises ConnectionResetError."""
    sock.sendall(b"ping")
    if sock.recv(4) != b"ping":
        raise ConnectionResetError("closed without an answer")


def test_latency_adds_the_round_trip_and_heal_takes_it_away(path: tuple[NetworkPath, int]) -> None:
    network, port = path
    network.latency(300)
    try:
        assert _round_trip(port) >= 0.3
    finally:
        network.heal()
    assert _passes_everything(network, port)


def test_a_black_hole_answers_nothing_and_closes_nothing_until_it_heals(path: tuple[NetworkPath, int]) -> None:
    network, port = path
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        network.black_hole()
        try:
            sock.settimeout(1)
            sock.sendall(b"ping")
            with pytest.raises(TimeoutError):
                sock.recv(4)
        finally:
            network.heal()
    assert _passes_everything(network, port), "a new connection passes once the link healed"


def test_a_reset_breaks_busy_connections_and_new_ones_pass(path: tuple[NetworkPath, int]) -> None:
    network, port = path
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(b"warm")
        assert sock.recv(4) == b"warm"
        broken = threading.Thread(target=network.reset_connections, kwargs={"window_s": 0.5})
        broken.start()
        time.sleep(0.1)
        with pytest.raises(ConnectionResetError):
            _ping(sock)
        broken.join()
    assert _passes_everything(network, port)


def test_a_link_that_is_down_refuses_connections_until_it_heals(path: tuple[NetworkPath, int]) -> None:
    network, port = path
    network.down()
    try:
        with pytest.raises(ConnectionRefusedError):
            _round_trip(port, timeout_s=1)
    finally:
        network.heal()
    assert _passes_everything(network, port)
