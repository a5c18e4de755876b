"""The one list of keys an MM2 file may carry, what each kind means to Strait, and typo suggestions.

Kinds of top-level key: `clusters`; flow settings (FlowSettings keys and `enabled`, which flows
inherit); client defaults (`security.protocol`, `ssl.*`, `sasl.*`, `bootstrap.servers`, which MM2
applies to every cluster); provider declarations; Strait's own `strait.*` and data-mirror's
`spark.*`; and keys MM2 or Connect read that Strait does not use (REST server, Connect worker and
connector framework keys). The last kind is accepted and reported as ignored, so a real MM2 file loads unchanged.
"""

from __future__ import annotations

import difflib
import enum
from collections.abc import Iterable

from shared.config.flow_settings import SETTING_KEYS
from shared.config.providers import is_provider_key

CLUSTERS_KEY = "clusters"
ENABLED_KEY = "enabled"
STRAIT_PREFIX = "strait."
# Spark settings for data-mirror's driver (spark.master, spark.executor.memory, ...), passed through as given.
SPARK_PREFIX = "spark."
CLIENT_PREFIXES = ("consumer.", "producer.", "admin.")

# Read by MM2's dedicated mode, Connect's worker, REST server or connector framework; unused by Strait.
IGNORED_KEYS: frozenset[str] = frozenset(
    {
        "dedicated.mode.enable.internal.rest",
        "listeners",
        "access.control.allow.origin",
        "access.control.allow.methods",
        "response.http.headers.config",
        "ssl.client.auth",
        "name",
        "connector.class",
        "source.cluster.alias",
        "target.cluster.alias",
        "tasks.max.enforce",
        "config.action.reload",
        "metric.reporters",
        "auto.include.jmx.reporter",
        "transaction.boundary",
        "transaction.boundary.interval.ms",
        "offsets.storage.topic",
        "group.id",
        "client.id",
        "plugin.path",
        "plugin.discovery",
        "scheduled.rebalance.max.delay.ms",
        "connect.protocol",
        "connector.client.config.override.policy",
        "topic.creation.enable",
        "heartbeat.interval.ms",
        "session.timeout.ms",
        "rebalance.timeout.ms",
    }
)
IGNORED_PREFIXES: tuple[str, ...] = (
    "offset.storage.",
    "config.storage.",
    "status.storage.",
    "key.converter",
    "value.converter",
    "header.converter",
    "replication.policy.",
    "task.",
    "worker.",
    "rest.",
    "errors.",
    "topic.creation.",
    "offset.flush.",
    "inter.worker.",
    "metrics.",
)

# Connect-worker keys that MM2 takes from `<alias>.` for the herders writing to that cluster;
# under a cluster alias they are kept apart from the client settings.
WORKER_KEYS: frozenset[str] = frozenset(
    {
        "exactly.once.source.support",
        "group.id",
        "listeners",
        "plugin.path",
        "plugin.discovery",
        "scheduled.rebalance.max.delay.ms",
        "connect.protocol",
        "connector.client.config.override.policy",
        "dedicated.mode.enable.internal.rest",
        "topic.creation.enable",
    }
)
WORKER_PREFIXES: tuple[str, ...] = (
    "offset.storage.",
    "config.storage.",
    "status.storage.",
    "key.converter",
    "value.converter",
    "header.converter",
    "replication.policy.",
    "task.",
    "worker.",
    "rest.",
    "offset.flush.",
    "inter.worker.",
    "config.providers",
)


class KeyKind(enum.Enum):
    """What a top-level or flow-level key (without its alias prefix) is to Strait."""

    CLUSTERS = "clusters"
    SETTING = "setting"
    STRAIT = "strait"
    PROVIDERS = "providers"
    CLIENT_DEFAULT = "client default"
    CLIENT_PREFIXED = "client prefixed"
    TRANSFORM = "transform"  # Connect's `transforms`/`predicates` keys (shared/config/transforms.py)
    IGNORED = "ignored"
    UNKNOWN = "unknown"


def is_client_default_key(key: str) -> bool:
    """Keys MM2 copies from the top level into every cluster's clients (MirrorClientConfig's own keys)."""
    if key in ("bootstrap.servers", "security.protocol"):
        return True
    return key.startswith(("ssl.", "sasl.")) and key != "ssl.client.auth"


def is_worker_key(key: str) -> bool:
    """True for a cluster-level key that configures Connect workers rather than Kafka clients."""
    return key in WORKER_KEYS or key.startswith(WORKER_PREFIXES)


def classify(key: str) -> KeyKind:
    """Kind of a top-level key, or of a flow-level key with its `A->B.` prefix removed."""
    if key == CLUSTERS_KEY:
        return KeyKind.CLUSTERS
    if key in SETTING_KEYS or key == ENABLED_KEY:
        return KeyKind.SETTING
    if key.startswith((STRAIT_PREFIX, SPARK_PREFIX)):
        return KeyKind.STRAIT
    if is_provider_key(key):
        return KeyKind.PROVIDERS
    if key in ("transforms", "predicates") or key.startswith(("transforms.", "predicates.")):
        return KeyKind.TRANSFORM
    if key in IGNORED_KEYS or key.startswith(IGNORED_PREFIXES):
        return KeyKind.IGNORED
    if is_client_default_key(key):
        return KeyKind.CLIENT_DEFAULT
    if key.startswith(CLIENT_PREFIXES):
        return KeyKind.CLIENT_PREFIXED
    return KeyKind.UNKNOWN


def first_segments() -> frozenset[str]:
    """First dotted part of every setting and client-default key; a cluster alias must not be one."""
    keys: Iterable[str] = (*SETTING_KEYS, "bootstrap.servers", "security.protocol", "ssl.", "sasl.", STRAIT_PREFIX)
    return frozenset(key.split(".", 1)[0] for key in keys if "." in key)


def suggest(key: str, *, prefix: str = "") -> str | None:
    """The known key closest to `key` (a likely typo), written with `prefix`, or None."""
    candidates = sorted(
        SETTING_KEYS | IGNORED_KEYS | {ENABLED_KEY, CLUSTERS_KEY, "bootstrap.servers", "transforms", "predicates"}
    )
    if prefix:
        candidates.remove(CLUSTERS_KEY)
    matches = difflib.get_close_matches(key, candidates, n=1, cutoff=0.8)
    return prefix + matches[0] if matches else None
