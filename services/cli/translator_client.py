"""A small synchronous client of the offset translator's HTTP API; problems become one-line CliErrors."""

from __future__ import annotations

from typing import Any

import httpx

from services.cli.errors import CliError

DEFAULT_TIMEOUT_S = 30.0


class TranslatorClient:
    """Calls `url` (e.g. http://127.0.0.1:8080) with an optional bearer token."""

    def __init__(self, url: str, *, token: str | None = None, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._url = url.rstrip("/")
        self._client = httpx.Client(base_url=self._url, headers=headers, timeout=timeout_s)

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()

    def get(self, path: str, **params: Any) -> dict[str, Any]:
        """GET `path` and return the JSON body."""
        return self._call("GET", path, params=params)

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST `body` as JSON to `path` and return the JSON body."""
        return self._call("POST", path, json=body)

    def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        try:
            response = self._client.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise CliError(f"cannot reach the translator at {self._url}: {exc}") from exc
        if response.status_code >= 400:
            raise CliError(f"translator: {response.status_code} {_problem_detail(response)}")
        try:
            body = response.json()
        except ValueError as exc:
            raise CliError(f"translator at {self._url} answered {path} with something other than JSON") from exc
        if not isinstance(body, dict):
            raise CliError(f"translator at {self._url} answered {path} with unexpected JSON")
        return body


def _problem_detail(response: httpx.Response) -> str:
    """The `detail` of a problem JSON answer, or the start of the body."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:200] or response.reason_phrase
    if isinstance(body, dict) and isinstance(body.get("detail"), str):
        return str(body["detail"])
    return response.reason_phrase
