"""Two HTTP GET clients for the load generator: a lean HTTP/1.1 keep-alive client on asyncio streams, and httpx.

Both keep a fixed set of connections and answer `get(path) -> status`. The lean one costs a few tens of
microseconds of CPU per request; httpx costs far more, enough to make the client the limit on a small machine.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Protocol
from urllib.parse import urlsplit

import httpx


class Session(Protocol):
    """A pool of connections to one server."""

    async def open(self) -> None:
        """Connect every connection before the clock starts."""

    async def get(self, path: str) -> int:
        """GET `path` on a free connection (waiting for one); the status code, body read in full."""

    async def close(self) -> None:
        """Close every connection."""


class _Connection:
    """One keep-alive HTTP/1.1 connection; responses must carry Content-Length (uvicorn's do)."""

    def __init__(self, host: str, port: int) -> None:
        self._host, self._port = host, port
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def open(self) -> None:
        self._reader, self._writer = await asyncio.open_connection(self._host, self._port)

    async def get(self, path: str) -> int:
        if self._reader is None or self._writer is None:
            await self.open()
        assert self._reader is not None
        assert self._writer is not None
        self._writer.write(f"GET {path} HTTP/1.1\r\nHost: {self._host}\r\n\r\n".encode())
        head = await self._reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        length = 0
        close = False
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"connection" and value.strip().lower() == b"close":
                close = True
        await self._reader.readexactly(length)
        if close:
            await self.close()
        return status

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(OSError):
                await self._writer.wait_closed()
        self._reader = self._writer = None


class LeanSession:
    """`connections` raw keep-alive connections handed out through a queue."""

    def __init__(self, base_url: str, connections: int) -> None:
        url = urlsplit(base_url)
        self._connections = [_Connection(url.hostname or "127.0.0.1", url.port or 80) for _ in range(connections)]
        self._free: asyncio.Queue[_Connection] = asyncio.Queue()

    async def open(self) -> None:
        """Connect every connection."""
        await asyncio.gather(*(connection.open() for connection in self._connections))
        for connection in self._connections:
            self._free.put_nowait(connection)

    async def get(self, path: str) -> int:
        """GET on the next free connection; a connection that failed is reopened on its next use."""
        connection = await self._free.get()
        try:
            return await connection.get(path)
        except (OSError, asyncio.IncompleteReadError, ValueError):
            await connection.close()
            raise
        finally:
            self._free.put_nowait(connection)

    async def close(self) -> None:
        """Close every connection."""
        await asyncio.gather(*(connection.close() for connection in self._connections))


class HttpxSession:
    """httpx.AsyncClient limited to `connections` requests in flight.

    The semaphore keeps requests from queueing inside httpcore's pool, which rescans its queue on every change
    and collapses the client (not the server) once thousands of requests wait.
    """

    def __init__(self, base_url: str, connections: int) -> None:
        limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
        self._client = httpx.AsyncClient(base_url=base_url, limits=limits, timeout=30)
        self._connections = connections
        self._in_flight = asyncio.Semaphore(connections)

    async def open(self) -> None:
        """Open the connections with one health check each."""
        await asyncio.gather(*(self._client.get("/health") for _ in range(self._connections)))

    async def get(self, path: str) -> int:
        """GET `path` once a request slot is free."""
        async with self._in_flight:
            return (await self._client.get(path)).status_code

    async def close(self) -> None:
        """Close the client."""
        await self._client.aclose()


def session(kind: str, base_url: str, connections: int) -> Session:
    """A `LeanSession` ("lean") or an `HttpxSession` ("httpx")."""
    if kind == "lean":
        return LeanSession(base_url, connections)
    if kind == "httpx":
        return HttpxSession(base_url, connections)
    raise ValueError(f"unknown client {kind!r}: expected 'lean' or 'httpx'")
