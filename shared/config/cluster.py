"""`ClusterConfig`: how to reach one cluster, from its `<alias>.` keys plus MM2's top-level client defaults."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from shared.config.known_keys import CLIENT_PREFIXES, is_worker_key
from shared.config.values import value_error
from shared.errors import ConfigError

BOOTSTRAP_SERVERS = "bootstrap.servers"
# host:port, optionally with a listener prefix (SSL://host:9092) or an IPv6 literal ([::1]:9092).
_ADDRESS = re.compile(r"\S+:[0-9]+")


@dataclass(frozen=True, slots=True)
class ClusterConfig:
    """One cluster's connection settings, in Java client key names. Treat the dicts as read-only.

    `client` holds every `<alias>.<key>` outside `consumer.`/`producer.`/`admin.` except
    bootstrap.servers and Connect-worker keys, with MM2's top-level defaults (`security.protocol`,
    `ssl.*`, `sasl.*`) filled in underneath. `consumer`, `producer` and `admin` hold the
    `<alias>.consumer.*` (etc.) keys without their prefix. `worker` keeps the Connect-worker keys
    MM2 reads from `<alias>.` (`offset.storage.*`, `exactly.once.source.support`, ...), never given
    to a client.
    """

    alias: str
    bootstrap_servers: str
    client: dict[str, str] = field(default_factory=dict)
    consumer: dict[str, str] = field(default_factory=dict)
    producer: dict[str, str] = field(default_factory=dict)
    admin: dict[str, str] = field(default_factory=dict)
    worker: dict[str, str] = field(default_factory=dict)

    def consumer_props(self) -> dict[str, str]:
        """bootstrap.servers, then `client`, then `consumer` (the most specific wins)."""
        return {BOOTSTRAP_SERVERS: self.bootstrap_servers, **self.client, **self.consumer}

    def producer_props(self) -> dict[str, str]:
        """bootstrap.servers, then `client`, then `producer` (the most specific wins)."""
        return {BOOTSTRAP_SERVERS: self.bootstrap_servers, **self.client, **self.producer}

    def admin_props(self) -> dict[str, str]:
        """bootstrap.servers, then `client`, then `admin` (the most specific wins)."""
        return {BOOTSTRAP_SERVERS: self.bootstrap_servers, **self.client, **self.admin}


def build_cluster(
    alias: str,
    props: Mapping[str, str],
    defaults: Mapping[str, str],
    *,
    key_names: Mapping[str, str] | None = None,
) -> ClusterConfig:
    """Build a cluster from its keys (`props`, alias prefix removed) over top-level client `defaults`.

    `key_names` maps a key of `props` to the key the user wrote, for error messages.
    """
    names = key_names or {}
    merged = {**defaults, **props}
    if BOOTSTRAP_SERVERS not in merged:
        key = f"{alias}.{BOOTSTRAP_SERVERS}"
        raise ConfigError(f"cluster '{alias}' has no {key}", key=key)
    bootstrap_key = BOOTSTRAP_SERVERS if BOOTSTRAP_SERVERS not in props else f"{alias}.{BOOTSTRAP_SERVERS}"
    bootstrap = _bootstrap(names.get(BOOTSTRAP_SERVERS, bootstrap_key), merged[BOOTSTRAP_SERVERS])
    sections: dict[str, dict[str, str]] = {prefix: {} for prefix in CLIENT_PREFIXES}
    client: dict[str, str] = {}
    worker: dict[str, str] = {}
    for key, value in merged.items():
        prefix = next((p for p in CLIENT_PREFIXES if key.startswith(p)), None)
        if prefix is not None:
            sections[prefix][key[len(prefix) :]] = value
        elif is_worker_key(key):
            worker[key] = value
        elif key != BOOTSTRAP_SERVERS:
            client[key] = value
    return ClusterConfig(
        alias=alias,
        bootstrap_servers=bootstrap,
        client=client,
        consumer=sections["consumer."],
        producer=sections["producer."],
        admin=sections["admin."],
        worker=worker,
    )


def _bootstrap(key: str, value: str) -> str:
    """Validate a host:port list and normalise it to comma-separated without spaces."""
    addresses = [part.strip() for part in value.split(",")]
    if not value.strip() or any(_ADDRESS.fullmatch(part) is None for part in addresses):
        raise value_error(key, value, "a comma-separated list of host:port")
    return ",".join(addresses)
