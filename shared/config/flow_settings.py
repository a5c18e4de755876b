"""`FlowSettings`: the typed connector-level settings of one replication flow, under MM2's key names.

The settings of flow A->B come from its effective properties (`A->B.<key>` over top-level `<key>`
over the default here). Defaults follow MM2 except the periodic intervals, which Strait keeps short
so that new topics, configs, ACLs and groups are picked up in seconds instead of ten minutes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from shared.config.values import parse_bool, parse_choice, parse_int, parse_regex_list, value_error
from shared.filters import (
    CONFIG_PROPERTIES_EXCLUDE_DEFAULT,
    GROUPS_EXCLUDE_DEFAULT,
    GROUPS_INCLUDE_DEFAULT,
    TOPICS_EXCLUDE_DEFAULT,
    TOPICS_INCLUDE_DEFAULT,
)

_MIRROR_PACKAGE = "org.apache.kafka.connect.mirror."
_SHORT_MAX = 2**15 - 1
_INT_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True, kw_only=True)
class FlowSettings:
    """Connector-level settings of one flow; constructing it directly skips validation (defaults only)."""

    replication_policy_class: Literal["default", "identity"] = "default"
    replication_policy_separator: str = "."
    internal_topic_separator_enabled: bool = True
    topics: tuple[str, ...] = TOPICS_INCLUDE_DEFAULT
    topics_exclude: tuple[str, ...] = TOPICS_EXCLUDE_DEFAULT
    groups: tuple[str, ...] = GROUPS_INCLUDE_DEFAULT
    groups_exclude: tuple[str, ...] = GROUPS_EXCLUDE_DEFAULT
    config_properties_exclude: tuple[str, ...] = CONFIG_PROPERTIES_EXCLUDE_DEFAULT
    use_defaults_from: Literal["source", "target"] = "target"
    heartbeats_replication_enabled: bool = True
    refresh_topics_enabled: bool = True
    refresh_topics_interval_s: int = 2
    sync_topic_configs_enabled: bool = True
    sync_topic_configs_interval_s: int = 10
    sync_topic_acls_enabled: bool = True
    sync_topic_acls_interval_s: int = 10
    refresh_groups_enabled: bool = True
    refresh_groups_interval_s: int = 5
    emit_checkpoints_enabled: bool = True
    emit_checkpoints_interval_s: int = 5
    sync_group_offsets_enabled: bool = False
    sync_group_offsets_interval_s: int = 5
    emit_heartbeats_enabled: bool = True
    emit_heartbeats_interval_s: int = 1
    emit_offset_syncs_enabled: bool = True
    offset_syncs_topic_location: Literal["source", "target"] = "source"
    offset_lag_max: int = 100
    replication_factor: int = 2
    checkpoints_topic_replication_factor: int = 3
    heartbeats_topic_replication_factor: int = 3
    offset_syncs_topic_replication_factor: int = 3
    tasks_max: int = 1
    exactly_once_enabled: bool = False
    admin_timeout_ms: int = 60_000
    consumer_poll_timeout_ms: int = 1_000
    # Strait's own: where checkpoint learns the source groups' commits (the stream of `__consumer_offsets`, or
    # MM2's polling), and how long it gathers a group's commits before checkpointing them.
    checkpoints_source: Literal["auto", "stream", "poll"] = "auto"
    checkpoints_coalesce_ms: int = 200
    # Strait's own: forward the source's record batches unchanged where that is exact (auto: at-least-once flows),
    # always (on: refused with exactly-once) or never (off: every record is copied one by one).
    copy_batches: Literal["auto", "on", "off"] = "auto"
    # Strait's own: a provenance header on each copy, and no copy of a record that came from the target
    # (shared/records/provenance.py): loop-free active/active under IdentityReplicationPolicy.
    provenance_enabled: bool = False


Parser = Callable[[str, str], object]


def _replication_policy(key: str, value: str) -> str:
    name = value.strip().removeprefix(_MIRROR_PACKAGE)
    if name == "DefaultReplicationPolicy":
        return "default"
    if name == "IdentityReplicationPolicy":
        return "identity"
    raise value_error(
        key, value, "DefaultReplicationPolicy or IdentityReplicationPolicy (the only ones Strait supports)"
    )


def _separator(key: str, value: str) -> str:
    text = value.strip()
    if not text or any(not (char.isascii() and (char.isalnum() or char in "._-")) for char in text):
        raise value_error(key, value, "one or more characters allowed in topic names (letters, digits, '.', '_', '-')")
    return text


def _only_class(*names: str) -> Parser:
    """A class-valued key where Strait has just MM2's default implementation."""

    def parse(key: str, value: str) -> str:
        text = value.strip()
        if text not in names:
            raise value_error(key, value, f"{names[-1]} (the only one Strait supports)")
        return text

    return parse


def _int(minimum: int, maximum: int = 2**63 - 1, expected: str | None = None) -> Parser:
    return lambda key, value: parse_int(key, value, minimum=minimum, maximum=maximum, expected=expected)


def _replication_factor(key: str, value: str) -> int:
    number = parse_int(key, value, expected="-1 (broker default) or a number from 1 to 32767")
    if number != -1 and not 1 <= number <= _SHORT_MAX:
        raise value_error(key, value, "-1 (broker default) or a number from 1 to 32767")
    return number


def _choice(*choices: str, ignore_case: bool = False) -> Parser:
    return lambda key, value: parse_choice(key, value, choices, ignore_case=ignore_case)


_SECONDS = _int(-(2**63), expected="a number of seconds")

# MM2 key -> (FlowSettings field or None, parser). None: parsed and checked, then combined below.
_SETTINGS: dict[str, tuple[str | None, Parser]] = {
    "replication.policy.class": ("replication_policy_class", _replication_policy),
    "replication.policy.separator": ("replication_policy_separator", _separator),
    "replication.policy.internal.topic.separator.enabled": ("internal_topic_separator_enabled", parse_bool),
    "topics": ("topics", parse_regex_list),
    "topics.exclude": ("topics_exclude", parse_regex_list),
    "groups": ("groups", parse_regex_list),
    "groups.exclude": ("groups_exclude", parse_regex_list),
    "config.properties.exclude": ("config_properties_exclude", parse_regex_list),
    "use.defaults.from": ("use_defaults_from", _choice("source", "target")),
    "heartbeats.replication.enabled": ("heartbeats_replication_enabled", parse_bool),
    "refresh.topics.enabled": ("refresh_topics_enabled", parse_bool),
    "refresh.topics.interval.seconds": ("refresh_topics_interval_s", _SECONDS),
    "sync.topic.configs.enabled": ("sync_topic_configs_enabled", parse_bool),
    "sync.topic.configs.interval.seconds": ("sync_topic_configs_interval_s", _SECONDS),
    "sync.topic.acls.enabled": ("sync_topic_acls_enabled", parse_bool),
    "sync.topic.acls.interval.seconds": ("sync_topic_acls_interval_s", _SECONDS),
    "refresh.groups.enabled": ("refresh_groups_enabled", parse_bool),
    "refresh.groups.interval.seconds": ("refresh_groups_interval_s", _SECONDS),
    "emit.checkpoints.enabled": ("emit_checkpoints_enabled", parse_bool),
    "emit.checkpoints.interval.seconds": ("emit_checkpoints_interval_s", _SECONDS),
    "sync.group.offsets.enabled": ("sync_group_offsets_enabled", parse_bool),
    "sync.group.offsets.interval.seconds": ("sync_group_offsets_interval_s", _SECONDS),
    "emit.heartbeats.enabled": ("emit_heartbeats_enabled", parse_bool),
    "emit.heartbeats.interval.seconds": ("emit_heartbeats_interval_s", _SECONDS),
    "emit.offset-syncs.enabled": ("emit_offset_syncs_enabled", parse_bool),
    "offset-syncs.topic.location": ("offset_syncs_topic_location", _choice("source", "target")),
    "offset.lag.max": ("offset_lag_max", _int(0)),
    "replication.factor": ("replication_factor", _replication_factor),
    "checkpoints.topic.replication.factor": ("checkpoints_topic_replication_factor", _replication_factor),
    "heartbeats.topic.replication.factor": ("heartbeats_topic_replication_factor", _replication_factor),
    "offset-syncs.topic.replication.factor": ("offset_syncs_topic_replication_factor", _replication_factor),
    "tasks.max": ("tasks_max", _int(1, _INT_MAX)),
    "admin.timeout.ms": ("admin_timeout_ms", _int(1)),
    "consumer.poll.timeout.ms": ("consumer_poll_timeout_ms", _int(0)),
    "strait.checkpoints.source": ("checkpoints_source", _choice("auto", "stream", "poll")),
    "strait.checkpoints.coalesce.ms": ("checkpoints_coalesce_ms", _int(0, 60_000)),
    "strait.copy.batches": ("copy_batches", _choice("auto", "on", "off")),
    "strait.provenance.enabled": ("provenance_enabled", parse_bool),
    # Kafka 3.5+ exactly-once: the connector-level request and the worker-level switch.
    "exactly.once.support": (None, _choice("enabled", "disabled", "requested", "required", ignore_case=True)),
    "exactly.once.source.support": (None, _choice("enabled", "preparing", "disabled", ignore_case=True)),
    # Pluggable classes where Strait has only MM2's defaults.
    "topic.filter.class": (None, _only_class("DefaultTopicFilter", _MIRROR_PACKAGE + "DefaultTopicFilter")),
    "group.filter.class": (None, _only_class("DefaultGroupFilter", _MIRROR_PACKAGE + "DefaultGroupFilter")),
    "config.property.filter.class": (
        None,
        _only_class("DefaultConfigPropertyFilter", _MIRROR_PACKAGE + "DefaultConfigPropertyFilter"),
    ),
    "forwarding.admin.class": (None, _only_class("ForwardingAdmin", "org.apache.kafka.clients.admin.ForwardingAdmin")),
}

# Kafka 3.x deprecated aliases (removed in 4.0): used only when the new key is absent.
LEGACY_ALIASES: dict[str, str] = {
    "topics.blacklist": "topics.exclude",
    "groups.blacklist": "groups.exclude",
    "config.properties.blacklist": "config.properties.exclude",
}

SETTING_KEYS: frozenset[str] = frozenset(_SETTINGS) | frozenset(LEGACY_ALIASES)

# (enabled key, interval key): a negative interval disables the feature, as in MM2.
_INTERVALS = (
    ("refresh.topics.enabled", "refresh.topics.interval.seconds"),
    ("sync.topic.configs.enabled", "sync.topic.configs.interval.seconds"),
    ("sync.topic.acls.enabled", "sync.topic.acls.interval.seconds"),
    ("refresh.groups.enabled", "refresh.groups.interval.seconds"),
    ("emit.checkpoints.enabled", "emit.checkpoints.interval.seconds"),
    ("sync.group.offsets.enabled", "sync.group.offsets.interval.seconds"),
    ("emit.heartbeats.enabled", "emit.heartbeats.interval.seconds"),
)


def parse_flow_settings(props: Mapping[str, str], *, key_names: Mapping[str, str] | None = None) -> FlowSettings:
    """Parse the settings keys of a flow's effective `props`; other keys are left alone.

    `key_names` maps a key of `props` to the key the user wrote (`A->B.topics`), for error messages.
    """
    names = key_names or {}
    parsed: dict[str, object] = {}
    for key, (_, parse) in _SETTINGS.items():
        source = _present(props, key)
        if source is not None:
            parsed[key] = parse(names.get(source, source), props[source])
    for enabled_key, interval_key in _INTERVALS:
        _apply_interval(parsed, enabled_key, interval_key, names.get(interval_key, interval_key), props)
    # Each value was produced by the parser paired with its field, so its type fits that field.
    changes: dict[str, Any] = {
        field: parsed[key] for key, (field, _) in _SETTINGS.items() if field is not None and key in parsed
    }
    changes["exactly_once_enabled"] = _exactly_once(parsed)
    return dataclasses.replace(FlowSettings(), **changes)


def _present(props: Mapping[str, str], key: str) -> str | None:
    """The key that supplies `key`: itself, else a legacy alias of it, else None."""
    if key in props:
        return key
    return next((old for old, new in LEGACY_ALIASES.items() if new == key and old in props), None)


def _apply_interval(
    parsed: dict[str, object], enabled_key: str, interval_key: str, name: str, props: Mapping[str, str]
) -> None:
    """Negative interval: feature off (MM2). Zero: refused while the feature is on. Keep intervals > 0."""
    interval = parsed.get(interval_key)
    if not isinstance(interval, int) or interval > 0:
        return
    if interval < 0:
        parsed[enabled_key] = False
    elif parsed.get(enabled_key, getattr(FlowSettings(), _field(enabled_key))):
        raise value_error(name, props[interval_key], "a positive number of seconds (or a negative one to disable)")
    del parsed[interval_key]


def _field(key: str) -> str:
    field = _SETTINGS[key][0]
    assert field is not None
    return field


def _exactly_once(parsed: Mapping[str, object]) -> bool:
    """`exactly.once.support` enabled/required turns it on, disabled off; otherwise the worker switch decides."""
    support = parsed.get("exactly.once.support")
    if support in ("enabled", "required"):
        return True
    if support == "disabled":
        return False
    return parsed.get("exactly.once.source.support") == "enabled"
