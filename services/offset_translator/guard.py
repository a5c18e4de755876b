"""What every request passes before the app reads it: Host and Origin, the body's size and type, and the token.

The app itself would parse a whole body before a dependency checked the token, so a large body sent without one
cost memory and event-loop time before its 401. Here a request that changes something (POST, PUT, PATCH, DELETE)
is refused before its body is read: from another origin (a web page's request), with a body over MAX_BODY_BYTES
(413), without the token when one is set (401), or with a body that is not JSON (415). On a loopback listener,
a Host header that names no loopback address is refused too: a web page whose name was re-pointed at 127.0.0.1
(DNS rebinding) sends its own name there. At most `max_requests` are served at once (503 beyond), counting requests,
not connections: idle connections cost the event loop next to nothing, and a cap on them would shut the probes
out (uvicorn's own limit counts every open connection).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from services.offset_translator.auth import TokenCheck
from services.offset_translator.errors import UnauthorizedError
from services.offset_translator.problems import problem_response

# The largest valid request: a failover's group (up to 32,767 characters, each up to 6 bytes as a JSON \u escape)
MAX_BODY_BYTES = 256 * 1024
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
LOOPBACK_NAMES = frozenset({"localhost", "localhost.", "ip6-localhost"})
ALWAYS_ANSWERED = frozenset({"/health", "/ready", "/metrics"})  # probes and scrapes: never refused as too many


class Refused(Exception):
    """A request the guard answers itself: status, title and what was wrong."""

    def __init__(self, status: int, title: str, detail: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status, self.title, self.detail, self.headers = status, title, detail, headers


def host_name(host_header: str) -> str:
    """The name in a Host header or an origin's authority, without its port (IPv6 brackets kept off)."""
    parsed = urlsplit(f"//{host_header.strip()}")
    return (parsed.hostname or "").lower()


def names_loopback(name: str) -> bool:
    """True for a name only this machine answers to: 'localhost' or a loopback address."""
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class RequestGuard:
    """Pure ASGI middleware; `loopback` says the translator listens on loopback only, where Host is checked."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        token_check: TokenCheck,
        loopback: bool,
        allowed_hosts: Iterable[str] = (),
        max_requests: int = 100,
    ) -> None:
        self._app = app
        self._token_check = token_check
        self._loopback = loopback
        self._allowed_hosts = frozenset(name.strip().lower() for name in allowed_hosts if name.strip())
        self._max_requests = max_requests
        self._in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        counted = scope.get("path") not in ALWAYS_ANSWERED
        try:
            if counted and self._in_flight >= self._max_requests:
                raise Refused(
                    503,
                    "Too many requests at once",
                    f"this translator serves {self._max_requests} requests at once (STRAIT_MAX_REQUESTS); retry",
                    {"Retry-After": "1"},
                )
            self._in_flight += counted
            try:
                headers = Headers(scope=scope)
                self._check_host(headers)
                if scope["method"] in UNSAFE_METHODS:
                    body = await self._checked_body(headers, receive)
                    receive = _replay(body, receive)
                await self._app(scope, receive, send)
            finally:
                self._in_flight -= counted
        except Refused as refused:
            response = problem_response(refused.status, refused.title, refused.detail, headers=refused.headers)
            await response(scope, receive, send)

    def _check_host(self, headers: Headers) -> None:
        if not self._loopback:
            return
        name = host_name(headers.get("host", ""))
        if names_loopback(name) or name in self._allowed_hosts:
            return
        raise Refused(
            421,
            "Misdirected request",
            f"this translator listens on loopback and answers to loopback names only, not Host '{name[:100]}' "
            "(a name that reaches it through a port-forward goes in STRAIT_ALLOWED_HOSTS)",
        )

    async def _checked_body(self, headers: Headers, receive: Receive) -> bytes:
        origin = headers.get("origin")
        if origin is not None and urlsplit(origin).netloc.lower() != headers.get("host", "").lower():
            raise Refused(403, "Forbidden", f"a request from another origin ({origin[:100]}) changes nothing here")
        if headers.get("sec-fetch-site") == "cross-site":
            raise Refused(403, "Forbidden", "a cross-site request changes nothing here")
        declared = headers.get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > MAX_BODY_BYTES):
            raise Refused(413, "Content too large", f"a request body is at most {MAX_BODY_BYTES} bytes")
        if self._token_check.has_token:
            self._check_token(headers.get("authorization"))
        body = await _read_body(receive)
        if body and not _is_json(headers.get("content-type", "")):
            raise Refused(415, "Unsupported media type", "a request body must be JSON (Content-Type: application/json)")
        return body

    def _check_token(self, authorization: str | None) -> None:
        scheme, _, token = (authorization or "").partition(" ")
        try:
            self._token_check.verify(token.strip() if scheme.lower() == "bearer" and token.strip() else None)
        except UnauthorizedError as exc:
            raise Refused(401, "Unauthorized", str(exc), {"WWW-Authenticate": "Bearer"}) from exc


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


async def _read_body(receive: Receive) -> bytes:
    """The whole body, refused once it passes MAX_BODY_BYTES (a chunked body declares no length)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise Refused(400, "Bad request", "the client went away before its body was sent")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise Refused(413, "Content too large", f"a request body is at most {MAX_BODY_BYTES} bytes")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes, server_receive: Receive) -> Receive:
    """A receive that gives the app the body already read, then the server's own messages (its disconnect)."""
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await server_receive()

    return receive
