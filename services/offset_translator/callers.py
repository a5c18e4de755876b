"""Who asked: every action that changes a cluster is logged with it, so an operator can tell afterwards."""

from __future__ import annotations

from fastapi import Request


def requester(request: Request) -> str:
    """The client's address, what a proxy forwarded, the user agent (each bounded: they are the client's to set)."""
    client = request.client.host if request.client is not None else "unknown"
    forwarded = request.headers.get("x-forwarded-for")
    agent = request.headers.get("user-agent", "")[:100]
    return f"http {client}{f' for {forwarded[:100]}' if forwarded else ''} ({agent})"
