"""Remote topic configs under MM2's rules: what a new topic gets, and config diffs as incremental alter ops."""

from __future__ import annotations

from shared.config_rules import alter_ops, creation_configs
from shared.filters import DefaultConfigPropertyFilter
from shared.kafka.topic_admin import ConfigEntrySpec, ConfigOp

TARGET_DEFAULTS = DefaultConfigPropertyFilter()
SOURCE_DEFAULTS = DefaultConfigPropertyFilter(use_defaults_from="source")


def topic(name: str, value: str) -> ConfigEntrySpec:
    return ConfigEntrySpec(name, value, "DYNAMIC_TOPIC_CONFIG")


def default(name: str, value: str | None) -> ConfigEntrySpec:
    return ConfigEntrySpec(name, value, "DEFAULT_CONFIG")


SOURCE = [
    topic("retention.ms", "3600000"),
    topic("cleanup.policy", "compact"),
    topic("min.insync.replicas", "2"),  # excluded by config.properties.exclude
    ConfigEntrySpec("max.message.bytes", "2000000", "DYNAMIC_DEFAULT_BROKER_CONFIG"),  # cluster-wide dynamic: copied
    ConfigEntrySpec("segment.bytes", "536870912", "STATIC_BROKER_CONFIG"),  # static broker config: never copied
    ConfigEntrySpec("message.downconversion.enable", "true", "DYNAMIC_TOPIC_CONFIG", read_only=True),
    ConfigEntrySpec("secret.thing", None, "DYNAMIC_TOPIC_CONFIG", sensitive=True),
    default("segment.ms", "604800000"),
    default("leader.replication.throttled.replicas", ""),
]


def test_a_new_remote_topic_gets_the_source_non_default_syncable_configs() -> None:
    assert creation_configs(SOURCE, TARGET_DEFAULTS) == {
        "retention.ms": "3600000",
        "cleanup.policy": "compact",
        "max.message.bytes": "2000000",
    }


def test_use_defaults_from_source_also_copies_source_defaults_except_excluded_ones() -> None:
    configs = creation_configs(SOURCE, SOURCE_DEFAULTS)
    assert configs["segment.ms"] == "604800000"
    assert "leader.replication.throttled.replicas" not in configs
    assert "min.insync.replicas" not in configs


def test_a_custom_exclude_list_replaces_the_default_one() -> None:
    only_retention_excluded = DefaultConfigPropertyFilter(exclude=(r"retention\..*",))
    configs = creation_configs(SOURCE, only_retention_excluded)
    assert "retention.ms" not in configs
    assert configs["min.insync.replicas"] == "2"


def test_a_remote_topic_in_step_needs_no_ops() -> None:
    target = [
        topic("retention.ms", "3600000"),
        topic("cleanup.policy", "compact"),
        topic("max.message.bytes", "2000000"),
        default("segment.ms", "604800000"),
    ]
    assert alter_ops(SOURCE, target, TARGET_DEFAULTS) == []


def test_changed_and_missing_values_are_set_in_source_order() -> None:
    target = [
        topic("retention.ms", "1000"),
        default("cleanup.policy", "delete"),
        # Same value, but inherited from the target broker: pinned on the topic as MM2 does.
        ConfigEntrySpec("max.message.bytes", "2000000", "DYNAMIC_BROKER_CONFIG"),
    ]
    assert alter_ops(SOURCE, target, TARGET_DEFAULTS) == [
        ConfigOp("retention.ms", "SET", "3600000"),
        ConfigOp("cleanup.policy", "SET", "compact"),
        ConfigOp("max.message.bytes", "SET", "2000000"),
    ]


def test_source_defaults_delete_target_overrides_when_defaults_come_from_the_target() -> None:
    target = [
        topic("retention.ms", "3600000"),
        topic("cleanup.policy", "compact"),
        topic("max.message.bytes", "2000000"),
        topic("segment.ms", "1000"),  # an override on the target only: MM2 resets it
        topic("leader.replication.throttled.replicas", "*"),  # excluded: a target-only throttle stays
        topic("min.insync.replicas", "1"),  # excluded: the target keeps its own
        topic("flush.ms", "1000"),  # the source did not describe it: left alone
    ]
    assert alter_ops(SOURCE, target, TARGET_DEFAULTS) == [ConfigOp("segment.ms", "DELETE")]


def test_source_defaults_are_set_when_defaults_come_from_the_source() -> None:
    target = [
        topic("retention.ms", "3600000"),
        topic("cleanup.policy", "compact"),
        topic("max.message.bytes", "2000000"),
        topic("segment.ms", "1000"),
    ]
    assert alter_ops(SOURCE, target, SOURCE_DEFAULTS) == [ConfigOp("segment.ms", "SET", "604800000")]


def test_read_only_properties_on_the_target_are_not_touched() -> None:
    target = [ConfigEntrySpec("retention.ms", "1", "DYNAMIC_TOPIC_CONFIG", read_only=True)]
    ops = alter_ops([topic("retention.ms", "3600000")], target, TARGET_DEFAULTS)
    assert ops == []
