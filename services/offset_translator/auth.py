"""Optional bearer-token auth: the write endpoint needs the token when one is set, and so do the endpoint
families the operator lists in `protected_endpoints`. Without a token, the write endpoint (failover moves
consumer groups) answers only on a loopback listener: reachable from other hosts, it is off."""

from __future__ import annotations

import hmac
import ipaddress
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from services.offset_translator.errors import ForbiddenError, UnauthorizedError

_bearer = HTTPBearer(auto_error=False, description="the translator's token (STRAIT_TRANSLATOR_TOKEN)")
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


class TokenCheck:
    """Compares a presented token with the configured one in constant time."""

    def __init__(self, token: str | None, protected: frozenset[str]) -> None:
        self._token = token.encode() if token else None
        self.protected = protected if token else frozenset()

    @property
    def has_token(self) -> bool:
        """True when a token is configured (the DR actions are off without one)."""
        return self._token is not None

    def is_protected(self, endpoint: str) -> bool:
        """True if `endpoint` (a family name such as "failover") needs the token."""
        return endpoint in self.protected

    def verify(self, presented: str | None) -> None:
        """UnauthorizedError unless `presented` is the token."""
        if self._token is None:
            return
        if presented is None:
            raise UnauthorizedError("this endpoint needs 'Authorization: Bearer <token>'")
        if not hmac.compare_digest(presented.encode(), self._token):
            raise UnauthorizedError("the bearer token is not valid for this translator")


async def require_token(request: Request, credentials: Credentials) -> None:
    """Dependency: the request carries the bearer token (documents the scheme in OpenAPI)."""
    checker: TokenCheck = request.app.state.token_check
    checker.verify(credentials.credentials if credentials is not None else None)


def is_loopback(host: str) -> bool:
    """True for an address only this machine reaches ('localhost', 127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to any interface


async def refuse_unprotected_failover(request: Request) -> None:
    """Dependency of the failover endpoint when no token is set and the translator listens beyond loopback."""
    host = request.app.state.settings.host
    raise ForbiddenError(
        f"failover is off: this translator listens on {host} and has no token; set STRAIT_TRANSLATOR_TOKEN "
        "(or STRAIT_TRANSLATOR_TOKEN_FILE), or listen on 127.0.0.1"
    )
