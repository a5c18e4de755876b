"""STRAIT_CONFIG_OVERRIDES: entry syntax and where overrides apply."""

from __future__ import annotations

import pytest

from shared.config import OVERRIDES_ENV, apply_overrides, parse_mm2_config, parse_overrides
from shared.errors import ConfigError


def test_entries_split_on_newlines_and_semicolons() -> None:
    text = "A->B.enabled=true; topics = orders.* \n# a comment\n\n  B.bootstrap.servers=b:9092;"
    assert parse_overrides(text) == {"A->B.enabled": "true", "topics": "orders.*", "B.bootstrap.servers": "b:9092"}


def test_escaped_semicolon_and_equals_in_value() -> None:
    text = r'A.sasl.jaas.config=Plain required username="u" password="p=q"\;;x=1'
    assert parse_overrides(text) == {"A.sasl.jaas.config": 'Plain required username="u" password="p=q";', "x": "1"}


def test_later_entry_wins_and_empty_value_allowed() -> None:
    assert parse_overrides("a=1;a=2;b=") == {"a": "2", "b": ""}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a=1;oops", "STRAIT_CONFIG_OVERRIDES entry 2 'oops': expected key=value"),
        ("=1", "STRAIT_CONFIG_OVERRIDES entry 1 '=1': expected key=value"),
        ("a b=1", "STRAIT_CONFIG_OVERRIDES entry 1 'a b=1': the key contains whitespace; expected key=value"),
    ],
)
def test_malformed_entries(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_overrides(text)
    assert str(info.value) == message


def test_malformed_entry_with_a_secret_is_redacted() -> None:
    with pytest.raises(ConfigError) as info:
        parse_overrides("A.ssl.key.password: hunter2")
    assert "hunter2" not in str(info.value)
    assert "<redacted>" in str(info.value)


def test_apply_overrides_replaces_and_adds_keys() -> None:
    merged = apply_overrides({"a": "1", "b": "2"}, {OVERRIDES_ENV: "b=3;c=4"})
    assert merged == {"a": "1", "b": "3", "c": "4"}


def test_no_env_var_means_no_change() -> None:
    assert apply_overrides({"a": "1"}, {}) == {"a": "1"}


def test_overrides_apply_before_references_resolve() -> None:
    props = {"clusters": "A,B", "A.bootstrap.servers": "a:9092", "B.bootstrap.servers": "b:9092"}
    env = {OVERRIDES_ENV: "B.bootstrap.servers=${env:B_SERVERS};A->B.enabled=true", "B_SERVERS": "b2:9093"}
    config = parse_mm2_config(props, env=env)
    assert config.clusters["B"].bootstrap_servers == "b2:9093"
    assert [flow.name for flow in config.enabled_flows] == ["A->B"]
