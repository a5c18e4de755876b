"""Requests refused before the app reads them: a body too large or sent without the token, a page of another origin,
a host name re-pointed at a loopback translator (DNS rebinding), a body that is not JSON."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator

import httpx
import pytest
import uvicorn
from fastapi import FastAPI

from services.offset_translator.guard import MAX_BODY_BYTES
from tests.unit.services.offset_translator.conftest import Feed, build_app

TOKEN = "guard-token-value-42"
DR_FAILOVER = "/v1/flows/A/B/dr/failover"
FAILOVER = "/v1/flows/A/B/failover"


async def _post(app: FastAPI, url: str, *, base: str = "http://127.0.0.1", **kwargs: object) -> httpx.Response:
    Feed(app.state.index).loaded()
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=base) as client:
        return await client.post(url, **kwargs)  # type: ignore[arg-type]


@contextlib.asynccontextmanager
async def serving(app: FastAPI) -> AsyncIterator[int]:
    """The app behind a real uvicorn on a free loopback port."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, lifespan="off", access_log=False))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            await asyncio.sleep(0.01)
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        await task
        sock.close()


async def test_a_huge_body_without_a_token_is_refused_before_it_is_sent() -> None:
    """Only the headers go out: a server that read the body first would wait for 20 MB that never come."""
    app = build_app(translator_token=TOKEN)
    async with serving(app) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            writer.write(
                f"POST {DR_FAILOVER} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {20 * 1024 * 1024}\r\n\r\n".encode()
            )
            await writer.drain()
            status_line = await asyncio.wait_for(reader.readline(), timeout=30)
        finally:
            writer.close()
    assert status_line.split()[1] == b"413", status_line


async def test_a_chunked_body_past_the_limit_is_refused() -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"group": "'
        for _ in range(MAX_BODY_BYTES // 1024 + 1):
            yield b"x" * 1024
        yield b'"}'

    answer = await _post(build_app(), FAILOVER, content=chunks(), headers={"Content-Type": "application/json"})
    assert answer.status_code == 413, answer.text
    assert str(MAX_BODY_BYTES) in answer.json()["detail"]


async def test_with_a_token_set_the_body_is_not_read_before_the_token_is_checked() -> None:
    app = build_app(translator_token=TOKEN)
    read: list[object] = []

    async def receive() -> dict[str, object]:
        read.append("body")
        return {"type": "http.request", "body": b'{"dry_run": true}', "more_body": False}

    sent: list[dict[str, object]] = []

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": DR_FAILOVER,
        "raw_path": DR_FAILOVER.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json"), (b"content-length", b"17")],
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 8080),
    }
    await app(scope, receive, send)  # type: ignore[arg-type]
    assert sent[0]["status"] == 401
    assert read == [], "the body was read before the missing token was refused"


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8080", "10.0.0.5"])
async def test_a_loopback_translator_refuses_a_host_name_that_is_not_its_own(host: str) -> None:
    """A page on evil.example whose name now resolves to 127.0.0.1 sends `Host: evil.example`."""
    answer = await _post(build_app(), FAILOVER, json={"group": "app", "allow_rewind": True}, headers={"Host": host})
    assert answer.status_code == 421, answer.text
    assert "loopback" in answer.json()["detail"]


async def test_loopback_names_and_the_allowed_ones_are_answered() -> None:
    app = build_app(allowed_hosts="strait.internal")
    for host in ["127.0.0.1:8080", "localhost", "[::1]:8080", "strait.internal:8080"]:
        answer = await _post(app, FAILOVER, json={"group": "nobody", "dry_run": True}, headers={"Host": host})
        assert answer.status_code != 421, (host, answer.text)


async def test_a_translator_listening_beyond_loopback_does_not_check_the_host() -> None:
    app = build_app(host="0.0.0.0", translator_token=TOKEN)
    answer = await _post(
        app, FAILOVER, json={"group": "nobody"}, headers={"Host": "translator.prod", "Authorization": f"Bearer {TOKEN}"}
    )
    assert answer.status_code != 421, answer.text


async def test_a_request_from_another_origin_changes_nothing() -> None:
    answer = await _post(build_app(), FAILOVER, json={"group": "app"}, headers={"Origin": "http://evil.example"})
    assert answer.status_code == 403, answer.text
    assert "another origin" in answer.json()["detail"]
    same = await _post(build_app(), FAILOVER, json={"group": "nobody"}, headers={"Origin": "http://127.0.0.1"})
    assert same.status_code != 403, same.text


async def test_a_body_without_a_json_content_type_is_refused() -> None:
    answer = await _post(build_app(), FAILOVER, content=b'{"group": "app"}')
    assert answer.status_code == 415, answer.text
    form = await _post(build_app(), FAILOVER, content=b'{"group": "app"}', headers={"Content-Type": "text/plain"})
    assert form.status_code == 415, form.text


async def test_requests_past_the_limit_are_refused_but_the_probes_and_idle_connections_are_not() -> None:
    """One request in flight with a limit of one: the next is answered 503, /health still 200; 300 idle connections
    count for nothing (a cap on connections, uvicorn's, would answer /health 503 for as long as they are held)."""
    app = build_app(max_requests=1)
    release = asyncio.Event()

    @app.get("/v1/slow")
    async def slow() -> dict[str, bool]:
        await release.wait()
        return {"done": True}

    async with serving(app) as port:
        idle = [await asyncio.open_connection("127.0.0.1", port) for _ in range(300)]
        try:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
                health = await client.get("/health")
                assert health.status_code == 200, health.text
                first = asyncio.create_task(client.get("/v1/slow"))
                await asyncio.sleep(0.5)  # the slow request is in flight
                second = await client.get("/v1/flows")
                assert second.status_code == 503, second.text
                assert second.headers["retry-after"] == "1"
                assert "STRAIT_MAX_REQUESTS" in second.json()["detail"]
                health = await client.get("/health")
                assert health.status_code == 200, health.text
                release.set()
                assert (await first).status_code == 200
                assert (await client.get("/v1/flows")).status_code == 200
        finally:
            for _, writer in idle:
                writer.close()
