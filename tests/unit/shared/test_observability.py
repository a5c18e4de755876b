"""Logs are JSON lines with secrets masked; /metrics, /health and /ready answer over HTTP."""

from __future__ import annotations

import io
import json
import logging
import socket
import threading
import time
import urllib.error
import urllib.request

import structlog
from prometheus_client import CollectorRegistry, Counter

from shared.bounded_http import MAX_CONNECTIONS, REQUEST_READ_TIMEOUT_S
from shared.observability import ObservabilityServer, configure_logging, register_secrets


def _lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_structlog_and_stdlib_loggers_share_one_json_stream() -> None:
    stream = io.StringIO()
    configure_logging("topic-sync", "INFO", stream=stream)
    structlog.get_logger("x").info("topic_created", topic="A.orders", partitions=6)
    logging.getLogger("uvicorn.error").warning("port in use")
    first, second = _lines(stream)
    assert first["event"] == "topic_created"
    assert first["topic"] == "A.orders"
    assert first["service"] == "topic-sync"
    assert second["event"] == "port in use"
    assert second["level"] == "warning"


def test_secrets_never_reach_a_log_line() -> None:
    stream = io.StringIO()
    configure_logging("acl-sync", "INFO", stream=stream)
    register_secrets(["s3cr3t-value"])
    log = structlog.get_logger("x")
    log.info("connecting", password="hunter2", note="jaas has password=s3cr3t-value inside")
    logging.getLogger("aiokafka").error("auth failed for s3cr3t-value")
    text = stream.getvalue()
    assert "hunter2" not in text
    assert "s3cr3t-value" not in text
    assert text.count("***") >= 3


def _get(port: int, path: str, timeout: float = 5) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def test_metrics_health_and_readiness_over_http() -> None:
    registry = CollectorRegistry()
    Counter("strait_things", "things done", registry=registry).inc(3)
    ready = {"value": False}
    server = ObservabilityServer(registry, live=lambda: (True, {}), ready=lambda: (ready["value"], {"why": "loading"}))
    server.start()
    try:
        status, body = _get(server.port, "/metrics")
        assert status == 200
        assert b"strait_things_total 3.0" in body
        assert _get(server.port, "/health")[0] == 200
        status, body = _get(server.port, "/ready")
        assert status == 503
        assert json.loads(body) == {"status": "unavailable", "why": "loading"}
        ready["value"] = True
        assert _get(server.port, "/ready")[0] == 200
        assert _get(server.port, "/nope")[0] == 404
    finally:
        server.stop()
        server.stop()


def test_a_failing_probe_answers_503_with_the_error() -> None:
    def broken() -> tuple[bool, dict[str, object]]:
        raise RuntimeError("index not loaded")

    server = ObservabilityServer(CollectorRegistry(), live=broken, ready=broken)
    server.start()
    try:
        status, body = _get(server.port, "/health")
        assert status == 503
        assert "index not loaded" in json.loads(body)["error"]
    finally:
        server.stop()


def test_secrets_inside_nested_values_are_masked_too() -> None:
    stream = io.StringIO()
    configure_logging("data-mirror", "INFO", stream=stream)
    register_secrets(["n3sted-secret"])
    structlog.get_logger("x").info(
        "client_config",
        props={"bootstrap.servers": "h:9092", "sasl.password": "hunter2", "inner": {"ssl.key.password": "pw"}},
        clusters=[{"name": "A", "note": "jaas password=n3sted-secret"}],
    )
    text = stream.getvalue()
    assert ("hunter2" in text, "n3sted-secret" in text, '"pw"' in text) == (False, False, False)
    props = json.loads(text.splitlines()[0])["props"]
    assert props["bootstrap.servers"] == "h:9092", "what is not secret stays readable"
    assert props["inner"]["ssl.key.password"] == "***"


def test_events_from_other_threads_name_the_service_too() -> None:
    stream = io.StringIO()
    configure_logging("heartbeat", "INFO", stream=stream)
    thread = threading.Thread(target=lambda: structlog.get_logger("watch").warning("cluster_unreachable"))
    thread.start()
    thread.join()
    assert _lines(stream)[0]["service"] == "heartbeat"


def _wait_closed_by_peer(conn: socket.socket, deadline: float) -> bool:
    """True once the server has closed `conn` (EOF or reset), False if it is still open at `deadline`."""
    while (remaining := deadline - time.monotonic()) > 0:
        conn.settimeout(remaining)
        try:
            if not conn.recv(4096):
                return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False
    return False


def test_idle_connections_neither_hold_a_thread_each_nor_keep_health_from_answering() -> None:
    # A client that connects and sends nothing, or half a request line, used to hold one thread for ever.
    server = ObservabilityServer(CollectorRegistry(), live=lambda: (True, {}), ready=lambda: (True, {}))
    threads_before = threading.active_count()
    idle: list[socket.socket] = []
    server.start()
    try:
        for i in range(300):
            conn = socket.create_connection(("127.0.0.1", server.port), timeout=10)
            idle.append(conn)
            if i % 3 == 0:
                conn.sendall(b"GET /hea")
        status, _ = _get(server.port, "/health", timeout=10)  # a fresh, well-behaved client is answered at all
        assert status == 200
        time.sleep(0.5)  # let the server take in what it has accepted
        held = threading.active_count() - threads_before
        assert held <= MAX_CONNECTIONS + 10, f"{held} threads for 300 idle connections"
        deadline = time.monotonic() + REQUEST_READ_TIMEOUT_S + 10
        still_open = sum(not _wait_closed_by_peer(conn, deadline) for conn in idle)
        assert still_open == 0, f"{still_open} idle connections still open after the request timeout"
        assert _get(server.port, "/metrics", timeout=10)[0] == 200
    finally:
        for conn in idle:
            conn.close()
        server.stop()


def _read_all(conn: socket.socket) -> bytes:
    chunks = []
    while chunk := conn.recv(4096):
        chunks.append(chunk)
    return b"".join(chunks)


def test_a_newcomer_is_refused_503_only_when_every_slot_is_answering() -> None:
    entered, release = threading.Semaphore(0), threading.Event()

    def slow() -> tuple[bool, dict[str, object]]:
        entered.release()
        release.wait(10)
        return True, {}

    server = ObservabilityServer(CollectorRegistry(), live=slow, ready=slow, max_connections=2)
    conns: list[socket.socket] = []
    server.start()
    try:
        for _ in range(2):
            conns.append(socket.create_connection(("127.0.0.1", server.port), timeout=10))
            conns[-1].sendall(b"GET /health HTTP/1.0\r\n\r\n")
        for _ in conns:
            assert entered.acquire(timeout=10), "each request reached the probe"
        conns.append(socket.create_connection(("127.0.0.1", server.port), timeout=10))
        assert _read_all(conns[-1]).startswith(b"HTTP/1.0 503")
        release.set()
        assert [_read_all(conn).split(b" ", 2)[1] for conn in conns[:2]] == [b"200", b"200"]
    finally:
        release.set()
        for conn in conns:
            conn.close()
        server.stop()
