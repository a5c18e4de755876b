"""A threading HTTP server whose idle or hostile clients cannot hold its threads or starve its probes."""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# Prometheus, the kubelet and an operator's curl send their request at once: a connection that sends nothing for
# this long (on any one read or write) is idle or hostile, and is closed rather than hold a thread for ever.
REQUEST_READ_TIMEOUT_S = 5.0
# Scrapers and probes need a handful of connections at a time; beyond this the oldest one still without a whole
# request is dropped for the newcomer, so idle clients can neither spend the process's threads nor starve a probe.
MAX_CONNECTIONS = 32
_BUSY = b"HTTP/1.0 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


class BoundedHTTPServer(ThreadingHTTPServer):
    """A daemon thread per connection, at most `max_connections` of them; the oldest idle one makes room.

    Eviction rather than refusal, so a client that keeps every slot full of idle connections (or trickles a request
    a byte per read timeout) cannot keep /health answering 503 until the kubelet restarts the process. A handler
    calls `answering` once it has read its request; only when every slot is answering is a newcomer refused.
    """

    daemon_threads = True  # a handler still reading never holds up shutdown
    request_queue_size = 128  # a burst of connections waits in the kernel's queue instead of resending its SYN

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        *,
        request_timeout_s: float = REQUEST_READ_TIMEOUT_S,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        super().__init__(address, handler)
        self._request_timeout_s = request_timeout_s
        self._max_connections = max_connections
        self._lock = threading.Lock()
        self._held: dict[socket.socket, bool] = {}  # open connections, oldest first: True once answering

    def process_request(self, request: Any, client_address: Any) -> None:
        """Admit the connection to a thread of its own (evicting the oldest idle one if full), or refuse it."""
        with self._lock:
            admitted = len(self._held) < self._max_connections or self._evict_idle()
            if admitted:
                self._held[request] = False
        if not admitted:  # every slot is answering a request: say so, without a thread
            _refuse(request)
            self.shutdown_request(request)
            return
        request.settimeout(self._request_timeout_s)  # kept by StreamRequestHandler, whose own timeout is None
        try:
            super().process_request(request, client_address)
        except BaseException:  # no thread started: the caller closes the connection
            self._release(request)
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        """Serve the connection, then give its slot back however the handler ended."""
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._release(request)

    def answering(self, request: socket.socket) -> None:
        """The request on this connection has been read: it is no longer idle and is not evicted."""
        with self._lock:
            if request in self._held:
                self._held[request] = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet about clients that went away, timed out or were evicted; anything else is a bug worth a trace."""
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)

    def server_close(self) -> None:
        """Close the listener and drop idle connections, so their threads end now rather than at the timeout."""
        super().server_close()
        with self._lock:
            idle = [conn for conn, answering in self._held.items() if not answering]
        for conn in idle:
            _drop(conn)

    def _evict_idle(self) -> bool:
        for conn, answering in self._held.items():
            if not answering:
                del self._held[conn]
                _drop(conn)  # its thread's read returns at once, and the thread ends
                return True
        return False

    def _release(self, request: socket.socket) -> None:
        with self._lock:
            self._held.pop(request, None)


def _drop(conn: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed by its own thread
        conn.shutdown(socket.SHUT_RDWR)


def _refuse(conn: socket.socket) -> None:
    with contextlib.suppress(OSError):  # best effort: the client may be gone already
        conn.setblocking(False)  # a client that reads nothing must not block the accepting thread
        conn.send(_BUSY)
