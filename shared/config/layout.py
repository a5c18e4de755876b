"""Sort MM2 keys by scope (top level, `<alias>.`, `<source>-><target>.`) and refuse keys that fit none."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from shared.config.flow import ROLES
from shared.config.known_keys import (
    CLIENT_PREFIXES,
    CLUSTERS_KEY,
    KeyKind,
    classify,
    first_segments,
    is_client_default_key,
    suggest,
)
from shared.config.redaction import REDACTED, is_sensitive_key
from shared.config.values import parse_list, value_error
from shared.errors import ConfigError

SIDES = ("source", "target")
ALIAS = re.compile(r"[A-Za-z0-9_-]+")  # what a cluster alias may hold (it prefixes topic names)
# Every ordered pair of clusters is a flow (MM2 builds them all, for heartbeats): 100 clusters are 9,900.
MAX_CLUSTERS = 100


@dataclass
class Layout:
    """Keys sorted by scope, alias prefixes removed."""

    aliases: tuple[str, ...]
    top_level: dict[str, str] = field(default_factory=dict)
    clusters: dict[str, dict[str, str]] = field(default_factory=dict)
    flows: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)


def lay_out(props: Mapping[str, str]) -> Layout:
    """Check `clusters` and every key's scope; return the keys sorted by scope, prefixes removed."""
    layout = Layout(aliases=_parse_clusters(props))
    layout.clusters = {alias: {} for alias in layout.aliases}
    for key, value in props.items():
        _place(layout, key, value)
    return layout


def _parse_clusters(props: Mapping[str, str]) -> tuple[str, ...]:
    if CLUSTERS_KEY not in props:
        raise ConfigError(
            "missing required key 'clusters' (a comma-separated list of cluster aliases, e.g. clusters=A,B)",
            key=CLUSTERS_KEY,
        )
    value = props[CLUSTERS_KEY]
    aliases = tuple(dict.fromkeys(parse_list(value)))
    if not aliases:
        raise value_error(CLUSTERS_KEY, value, "a comma-separated list of cluster aliases, e.g. A,B")
    if len(aliases) > MAX_CLUSTERS:
        raise value_error(CLUSTERS_KEY, value, f"at most {MAX_CLUSTERS} cluster aliases, not {len(aliases)}")
    reserved = first_segments()
    for alias in aliases:
        if ALIAS.fullmatch(alias) is None:
            raise value_error(
                CLUSTERS_KEY,
                value,
                f"aliases of letters, digits, '_' and '-' only (they prefix topic names), not {alias!r}",
            )
        if alias in reserved:
            raise value_error(
                CLUSTERS_KEY, value, f"aliases that do not clash with MM2 keys starting '{alias}.', not {alias!r}"
            )
    return aliases


def _place(layout: Layout, key: str, value: str) -> None:
    """File `key` under its scope, or raise for a key that fits none."""
    head, dot, rest = key.partition(".")
    if "->" in head:
        source, target = _flow_of(layout, key, value, head, rest)
        kind_of_flow_key = flow_kind(rest)
        if kind_of_flow_key is None:
            hint = suggest(rest, prefix=f"{head}.")
            raise _key_error(f"unknown key '{key}'" + (f" (did you mean '{hint}'?)" if hint else ""), key, value)
        if kind_of_flow_key == "ignored":
            layout.ignored.append(key)
        layout.flows.setdefault((source, target), {})[rest] = value
    elif dot and head in layout.clusters:
        layout.clusters[head][rest] = value
    else:
        kind = classify(key)
        if kind is KeyKind.UNKNOWN:
            raise _unknown_top_level(layout, key, value)
        if kind in (KeyKind.IGNORED, KeyKind.CLIENT_PREFIXED):
            layout.ignored.append(key)
        layout.top_level[key] = value


def _flow_of(layout: Layout, key: str, value: str, head: str, rest: str) -> tuple[str, str]:
    source, _, target = head.partition("->")
    clusters = ",".join(layout.aliases)
    if not rest:
        raise _key_error(f"key '{key}' names flow '{head}' but no setting; expected {head}.<key>", key, value)
    for alias in (source, target):
        if alias not in layout.clusters:
            raise _key_error(
                f"key '{key}': flow '{head}' names unknown cluster alias '{alias}' (clusters={clusters})", key, value
            )
    if source == target:
        raise _key_error(f"key '{key}': flow '{head}' has the same source and target", key, value)
    return source, target


def flow_kind(rest: str) -> str | None:
    """setting, transform, cluster, side, override or ignored, for a flow key without `A->B.`; None if unknown."""
    kind = classify(rest)
    if kind in (KeyKind.SETTING, KeyKind.STRAIT):
        return "setting"
    if kind is KeyKind.TRANSFORM:
        return "transform"
    if kind is KeyKind.IGNORED:
        return "ignored"
    if rest.startswith(tuple(f"{side}.cluster." for side in SIDES)):
        return "cluster"
    if rest.startswith(tuple(f"{side}.{role}." for side in SIDES for role in ROLES)):
        return "side"
    if kind is KeyKind.CLIENT_PREFIXED:
        return "override"
    if kind in (KeyKind.CLIENT_DEFAULT, KeyKind.PROVIDERS):
        return "ignored"
    return None


def _unknown_top_level(layout: Layout, key: str, value: str) -> ConfigError:
    head, dot, rest = key.partition(".")
    clusters = ",".join(layout.aliases)
    reserved = first_segments()
    looks_like_cluster = rest == "bootstrap.servers" or rest.startswith(CLIENT_PREFIXES) or is_client_default_key(rest)
    if dot and head not in reserved and looks_like_cluster:
        return _key_error(f"key '{key}' names unknown cluster alias '{head}' (clusters={clusters})", key, value)
    hint = suggest(key)
    if hint:
        return _key_error(f"unknown key '{key}' (did you mean '{hint}'?)", key, value)
    if dot and head not in reserved:
        return _key_error(f"unknown key '{key}' ('{head}' is not a cluster alias; clusters={clusters})", key, value)
    return _key_error(f"unknown key '{key}'", key, value)


def _key_error(message: str, key: str, value: str) -> ConfigError:
    return ConfigError(message, key=key, value=REDACTED if is_sensitive_key(key) else value)
