"""Logs are JSON lines with secrets masked; /metrics, /health and /ready answer over HTTP."""

from __future__ import annotations

import io
import json
import logging
import threading
import urllib.error
import urllib.request

import structlog
from prometheus_client import CollectorRegistry, Counter

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


def _get(port: int, path: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
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
