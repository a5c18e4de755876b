"""Secrets never appear in error messages, whatever path the error takes."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared.config import OVERRIDES_ENV, is_sensitive_key, parse_mm2_config, parse_properties
from shared.config.redaction import describe
from shared.config.values import parse_bool
from shared.errors import ConfigError

SECRET = "hunter2-very-secret"
BASE = {"clusters": "A,B", "A.bootstrap.servers": "a:9092", "B.bootstrap.servers": "b:9092"}


@pytest.mark.parametrize(
    "key",
    [
        "A.ssl.key.password",
        "ssl.keystore.password",
        "sasl.jaas.config",
        "A->B.producer.sasl.jaas.config",
        "ssl.keystore.key",
        "basic.auth.user.info",
        "sasl.oauthbearer.token.endpoint.url",
        "client.secret",
        "api.key",
    ],
)
def test_sensitive_keys(key: str) -> None:
    assert is_sensitive_key(key)
    assert describe(key, SECRET) == f"{key}=<redacted>"


@pytest.mark.parametrize("key", ["bootstrap.servers", "key.converter", "topics", "ssl.keystore.location"])
def test_ordinary_keys(key: str) -> None:
    assert not is_sensitive_key(key)
    assert describe(key, "v") == f"{key}='v'"


def test_value_error_on_a_secret_key_hides_the_value() -> None:
    with pytest.raises(ConfigError) as info:
        parse_bool("A.ssl.key.password", SECRET)
    assert SECRET not in str(info.value)
    assert str(info.value) == "A.ssl.key.password=<redacted>: expected true or false"
    assert info.value.value == "<redacted>"


def test_unknown_secret_key_error_hides_the_value() -> None:
    with pytest.raises(ConfigError) as info:
        parse_mm2_config({**BASE, "my.secret.token": SECRET}, env={})
    assert SECRET not in str(info.value)
    assert info.value.value == "<redacted>"


def test_provider_error_never_shows_file_contents(tmp_path: Path) -> None:
    secrets = tmp_path / "secrets.properties"
    secrets.write_text(f"password={SECRET}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        parse_mm2_config({**BASE, "A.ssl.key.password": f"${{file:{secrets}:pasword}}"}, env={})
    assert "key 'pasword' not found" in str(info.value)
    assert SECRET not in str(info.value)


def test_resolved_secret_is_not_echoed_by_a_value_error() -> None:
    props = {**BASE, "A->B.ssl.key.password": "${env:PW}", "A->B.sasl.jaas.config": "${env:PW}"}
    config = parse_mm2_config(props, env={"PW": SECRET})
    assert config.ignored_keys == ("A->B.ssl.key.password", "A->B.sasl.jaas.config")
    with pytest.raises(ConfigError) as info:
        parse_bool("A->B.ssl.key.password", config.flow("A", "B").props["ssl.key.password"])
    assert SECRET not in str(info.value)


def test_malformed_escape_in_a_secret_line_shows_no_part_of_it() -> None:
    with pytest.raises(ConfigError) as info:
        parse_properties("a=1\nssl.key.password=ab\\u12G4cd", source="mm2.properties")
    assert str(info.value) == "mm2.properties:2: malformed \\uXXXX escape in the value of 'ssl.key.password'"
    assert "12G4" not in str(info.value)


def test_malformed_override_with_secret_is_redacted() -> None:
    with pytest.raises(ConfigError) as info:
        parse_mm2_config(BASE, env={OVERRIDES_ENV: f"A.sasl.jaas.config {SECRET}"})
    assert SECRET not in str(info.value)
    assert "<redacted>" in str(info.value)
