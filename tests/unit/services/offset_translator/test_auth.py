"""Bearer-token auth: failover needs the token once one is set; other families only when the operator says so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from services.offset_translator.app import create_app
from services.offset_translator.settings import TranslatorSettings
from shared.errors import ConfigError
from tests.unit.services.offset_translator.conftest import Feed, build_app, make_config

TOKEN = "s3cret-token-value"
FAILOVER = "/v1/flows/A/B/failover"
OFFSETS = "/v1/flows/A/B/offsets?group=nobody"


async def call(app: FastAPI, method: str, url: str, token: str | None = None, **kwargs: Any) -> httpx.Response:
    Feed(app.state.index).loaded()
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
        return await client.request(method, url, headers=headers, **kwargs)


@pytest.fixture
def guarded() -> FastAPI:
    return build_app(translator_token=TOKEN)


async def test_failover_needs_the_token_when_one_is_set(guarded: FastAPI) -> None:
    missing = await call(guarded, "POST", FAILOVER, json={"group": "nobody"})
    assert missing.status_code == 401
    assert missing.headers["www-authenticate"] == "Bearer"
    assert missing.headers["content-type"] == "application/problem+json"
    wrong = await call(guarded, "POST", FAILOVER, "not-it", json={"group": "nobody"})
    assert wrong.status_code == 401
    assert "not valid" in wrong.json()["detail"]
    # With the token the request reaches the endpoint, which does not know the group.
    right = await call(guarded, "POST", FAILOVER, TOKEN, json={"group": "nobody"})
    assert right.status_code == 404


async def test_read_endpoints_stay_open_unless_listed(guarded: FastAPI) -> None:
    assert (await call(guarded, "GET", OFFSETS)).status_code == 404
    assert (await call(guarded, "GET", "/metrics")).status_code == 200


@pytest.mark.parametrize(
    ("protected", "url", "open_url"),
    [
        ("offsets", OFFSETS, "/v1/status"),
        ("status,metrics", "/metrics", "/v1/flows"),
        ("all", "/v1/clusters", "/health"),
    ],
)
async def test_listed_families_need_the_token(protected: str, url: str, open_url: str) -> None:
    app = build_app(translator_token=TOKEN, protected_endpoints=protected)
    assert (await call(app, "GET", url)).status_code == 401
    assert (await call(app, "GET", url, TOKEN)).status_code != 401
    assert (await call(app, "GET", open_url)).status_code == 200


async def test_without_a_token_failover_is_open() -> None:
    assert (await call(build_app(), "POST", FAILOVER, json={"group": "nobody"})).status_code == 404


async def test_openapi_shows_the_scheme_only_on_protected_operations(guarded: FastAPI) -> None:
    schema = (await call(guarded, "GET", "/openapi.json")).json()
    failover = schema["paths"][FAILOVER.replace("A/B", "{source}/{target}")]["post"]
    assert failover["security"] == [{"HTTPBearer": []}]
    assert "401" in failover["responses"]
    offsets = schema["paths"]["/v1/flows/{source}/{target}/offsets"]["get"]
    assert "security" not in offsets


def test_token_from_a_file(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(f"{TOKEN}\n")
    settings = TranslatorSettings(config=Path("x"), translator_token=None, translator_token_file=token_file)
    assert settings.token() == TOKEN
    assert settings.protected() == {"failover", "dr"}


def test_token_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STRAIT_TRANSLATOR_TOKEN", TOKEN)
    monkeypatch.setenv("STRAIT_PROTECTED_ENDPOINTS", "translate, topology")
    settings = TranslatorSettings(config=Path("x"))
    assert settings.token() == TOKEN
    assert settings.protected() == {"failover", "dr", "translate", "topology"}


def test_bad_token_settings_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no token"):
        create_app(
            TranslatorSettings(config=Path("x"), translator_token=None, protected_endpoints="status"),
            make_config(),
            follow=False,
        )
    with pytest.raises(ConfigError, match="cannot read it"):
        create_app(
            TranslatorSettings(config=Path("x"), translator_token=None, translator_token_file=tmp_path / "absent"),
            make_config(),
            follow=False,
        )
    with pytest.raises(ValueError, match="unknown endpoint 'offset'"):
        TranslatorSettings(config=Path("x"), protected_endpoints="offset")


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.1.2.3", "translator.internal"])
async def test_without_a_token_failover_is_off_on_a_listener_other_hosts_reach(host: str) -> None:
    """Failover moves consumer groups: open to whoever reaches the port only when that is this machine alone."""
    exposed = build_app(host=host)
    refused = await call(exposed, "POST", FAILOVER, json={"group": "nobody"})
    assert refused.status_code == 403
    assert refused.headers["content-type"] == "application/problem+json"
    assert "set STRAIT_TRANSLATOR_TOKEN" in refused.json()["detail"]
    assert (await call(exposed, "GET", OFFSETS)).status_code == 404, "reading stays open"


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost"])
async def test_without_a_token_failover_answers_on_loopback(host: str) -> None:
    local = build_app(host=host)
    assert (await call(local, "POST", FAILOVER, json={"group": "nobody"})).status_code == 404
