"""FlowSettings: every default, each key's parsing, MM2 aliases and each value error."""

from __future__ import annotations

import pytest

from shared.config import FlowSettings, parse_flow_settings
from shared.errors import ConfigError


def test_defaults_follow_mm2_except_strait_intervals() -> None:
    settings = parse_flow_settings({})
    assert settings == FlowSettings()
    assert settings.replication_policy_class == "default"
    assert settings.replication_policy_separator == "."
    assert settings.internal_topic_separator_enabled is True
    assert settings.topics == (".*",)
    assert settings.topics_exclude == (r".*[\-\.]internal", r".*\.replica", "__.*")
    assert settings.groups == (".*",)
    assert settings.groups_exclude == ("console-consumer-.*", "connect-.*", "__.*")
    assert settings.config_properties_exclude == (
        r"follower\.replication\.throttled\.replicas",
        r"leader\.replication\.throttled\.replicas",
        r"message\.timestamp\.difference\.max\.ms",
        r"message\.timestamp\.type",
        r"unclean\.leader\.election\.enable",
        r"min\.insync\.replicas",
    )
    assert settings.use_defaults_from == "target"
    assert settings.heartbeats_replication_enabled is True
    assert (settings.refresh_topics_enabled, settings.refresh_topics_interval_s) == (True, 2)
    assert (settings.sync_topic_configs_enabled, settings.sync_topic_configs_interval_s) == (True, 10)
    assert (settings.sync_topic_acls_enabled, settings.sync_topic_acls_interval_s) == (True, 10)
    assert (settings.refresh_groups_enabled, settings.refresh_groups_interval_s) == (True, 5)
    assert (settings.emit_checkpoints_enabled, settings.emit_checkpoints_interval_s) == (True, 5)
    assert (settings.sync_group_offsets_enabled, settings.sync_group_offsets_interval_s) == (False, 5)
    assert (settings.emit_heartbeats_enabled, settings.emit_heartbeats_interval_s) == (True, 1)
    assert settings.emit_offset_syncs_enabled is True
    assert settings.offset_syncs_topic_location == "source"
    assert settings.offset_lag_max == 100
    assert settings.replication_factor == 2
    assert settings.checkpoints_topic_replication_factor == 3
    assert settings.heartbeats_topic_replication_factor == 3
    assert settings.offset_syncs_topic_replication_factor == 3
    assert settings.tasks_max == 1
    assert settings.exactly_once_enabled is False
    assert settings.admin_timeout_ms == 60_000
    assert settings.consumer_poll_timeout_ms == 1_000


def test_every_key_is_parsed_into_its_field() -> None:
    props = {
        "replication.policy.class": "org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
        "replication.policy.separator": "_",
        "replication.policy.internal.topic.separator.enabled": "FALSE",
        "topics": " orders.* , payments ",
        "topics.exclude": "",
        "groups": "app-.*",
        "groups.exclude": "tmp-.*",
        "config.properties.exclude": r"retention\.ms",
        "use.defaults.from": "source",
        "heartbeats.replication.enabled": "false",
        "refresh.topics.enabled": "false",
        "refresh.topics.interval.seconds": "30",
        "sync.topic.configs.enabled": "False",
        "sync.topic.configs.interval.seconds": "31",
        "sync.topic.acls.enabled": "false",
        "sync.topic.acls.interval.seconds": "32",
        "refresh.groups.enabled": "false",
        "refresh.groups.interval.seconds": "33",
        "emit.checkpoints.enabled": "false",
        "emit.checkpoints.interval.seconds": "34",
        "sync.group.offsets.enabled": "true",
        "sync.group.offsets.interval.seconds": "35",
        "emit.heartbeats.enabled": "false",
        "emit.heartbeats.interval.seconds": "36",
        "emit.offset-syncs.enabled": "false",
        "offset-syncs.topic.location": "target",
        "offset.lag.max": "0",
        "replication.factor": "-1",
        "checkpoints.topic.replication.factor": "1",
        "heartbeats.topic.replication.factor": "2",
        "offset-syncs.topic.replication.factor": "+4",
        "tasks.max": "8",
        "exactly.once.support": "enabled",
        "admin.timeout.ms": "5000",
        "consumer.poll.timeout.ms": "250",
        "topic.filter.class": "org.apache.kafka.connect.mirror.DefaultTopicFilter",
        "group.filter.class": "DefaultGroupFilter",
        "config.property.filter.class": "org.apache.kafka.connect.mirror.DefaultConfigPropertyFilter",
        "forwarding.admin.class": "org.apache.kafka.clients.admin.ForwardingAdmin",
    }
    assert parse_flow_settings(props) == FlowSettings(
        replication_policy_class="identity",
        replication_policy_separator="_",
        internal_topic_separator_enabled=False,
        topics=("orders.*", "payments"),
        topics_exclude=(),
        groups=("app-.*",),
        groups_exclude=("tmp-.*",),
        config_properties_exclude=(r"retention\.ms",),
        use_defaults_from="source",
        heartbeats_replication_enabled=False,
        refresh_topics_enabled=False,
        refresh_topics_interval_s=30,
        sync_topic_configs_enabled=False,
        sync_topic_configs_interval_s=31,
        sync_topic_acls_enabled=False,
        sync_topic_acls_interval_s=32,
        refresh_groups_enabled=False,
        refresh_groups_interval_s=33,
        emit_checkpoints_enabled=False,
        emit_checkpoints_interval_s=34,
        sync_group_offsets_enabled=True,
        sync_group_offsets_interval_s=35,
        emit_heartbeats_enabled=False,
        emit_heartbeats_interval_s=36,
        emit_offset_syncs_enabled=False,
        offset_syncs_topic_location="target",
        offset_lag_max=0,
        replication_factor=-1,
        checkpoints_topic_replication_factor=1,
        heartbeats_topic_replication_factor=2,
        offset_syncs_topic_replication_factor=4,
        tasks_max=8,
        exactly_once_enabled=True,
        admin_timeout_ms=5000,
        consumer_poll_timeout_ms=250,
    )


@pytest.mark.parametrize(
    "name", ["DefaultReplicationPolicy", "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"]
)
def test_default_policy_by_short_or_full_name(name: str) -> None:
    assert parse_flow_settings({"replication.policy.class": name}).replication_policy_class == "default"


def test_identity_policy_by_short_name() -> None:
    settings = parse_flow_settings({"replication.policy.class": "IdentityReplicationPolicy"})
    assert settings.replication_policy_class == "identity"


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ("topics.blacklist", "topics.exclude", "topics_exclude"),
        ("groups.blacklist", "groups.exclude", "groups_exclude"),
        ("config.properties.blacklist", "config.properties.exclude", "config_properties_exclude"),
    ],
)
def test_legacy_blacklist_keys_apply_unless_new_key_is_set(old: str, new: str, field: str) -> None:
    assert getattr(parse_flow_settings({old: "x.*"}), field) == ("x.*",)
    assert getattr(parse_flow_settings({old: "x.*", new: "y.*"}), field) == ("y.*",)


def test_negative_interval_disables_the_feature_as_in_mm2() -> None:
    settings = parse_flow_settings(
        {"sync.topic.acls.interval.seconds": "-1", "emit.checkpoints.interval.seconds": "-5"}
    )
    assert (settings.sync_topic_acls_enabled, settings.sync_topic_acls_interval_s) == (False, 10)
    assert (settings.emit_checkpoints_enabled, settings.emit_checkpoints_interval_s) == (False, 5)


def test_zero_interval_is_allowed_only_when_disabled() -> None:
    settings = parse_flow_settings({"sync.group.offsets.interval.seconds": "0"})
    assert (settings.sync_group_offsets_enabled, settings.sync_group_offsets_interval_s) == (False, 5)
    with pytest.raises(ConfigError) as info:
        parse_flow_settings({"refresh.topics.interval.seconds": "0"})
    assert str(info.value) == (
        "refresh.topics.interval.seconds='0': expected a positive number of seconds (or a negative one to disable)"
    )


@pytest.mark.parametrize(
    ("support", "source_support", "expected"),
    [
        ("enabled", None, True),
        ("required", None, True),
        ("REQUESTED", "enabled", True),
        ("requested", None, False),
        ("disabled", "enabled", False),
        (None, "enabled", True),
        (None, "Preparing", False),
        (None, "disabled", False),
    ],
)
def test_exactly_once(support: str | None, source_support: str | None, expected: bool) -> None:
    props = {}
    if support is not None:
        props["exactly.once.support"] = support
    if source_support is not None:
        props["exactly.once.source.support"] = source_support
    assert parse_flow_settings(props).exactly_once_enabled is expected


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("emit.heartbeats.enabled", "yes", "emit.heartbeats.enabled='yes': expected true or false"),
        ("sync.group.offsets.enabled", "1", "sync.group.offsets.enabled='1': expected true or false"),
        ("refresh.groups.enabled", "no", "refresh.groups.enabled='no': expected true or false"),
        (
            "refresh.topics.interval.seconds",
            "10s",
            "refresh.topics.interval.seconds='10s': expected a number of seconds",
        ),
        ("emit.checkpoints.interval.seconds", "1_000", "emit.checkpoints.interval.seconds='1_000': expected a number"),
        ("offset.lag.max", "-1", "offset.lag.max='-1': expected an integer >= 0"),
        ("tasks.max", "0", "tasks.max='0': expected an integer from 1 to 2147483647"),
        ("admin.timeout.ms", "0", "admin.timeout.ms='0': expected an integer >= 1"),
        ("replication.factor", "0", "replication.factor='0': expected -1 (broker default) or a number from 1 to 32767"),
        ("heartbeats.topic.replication.factor", "40000", "heartbeats.topic.replication.factor='40000': expected -1"),
        ("offset-syncs.topic.location", "Target", "offset-syncs.topic.location='Target': expected source or target"),
        ("use.defaults.from", "both", "use.defaults.from='both': expected source or target"),
        ("exactly.once.support", "maybe", "exactly.once.support='maybe': expected one of enabled, disabled, requested"),
        ("exactly.once.source.support", "on", "exactly.once.source.support='on': expected one of enabled, preparing"),
        ("replication.policy.separator", "", "replication.policy.separator='': expected one or more characters"),
        ("replication.policy.separator", "/", "replication.policy.separator='/': expected one or more characters"),
        (
            "replication.policy.class",
            "com.example.MyPolicy",
            "replication.policy.class='com.example.MyPolicy': expected DefaultReplicationPolicy or "
            "IdentityReplicationPolicy (the only ones Strait supports)",
        ),
        ("topic.filter.class", "com.example.F", "topic.filter.class='com.example.F': expected org.apache.kafka"),
        ("topics", "ok, [unclosed", "topics='ok, [unclosed': entry '[unclosed' is not a valid regular expression"),
        ("groups.exclude", "(?P<g>a), (?P<g>b)", "groups.exclude='(?P<g>a), (?P<g>b)': the entries joined with '|'"),
    ],
)
def test_value_errors_name_key_value_and_expectation(key: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_flow_settings({key: value})
    assert str(info.value).startswith(message)
    assert info.value.key == key
    assert info.value.value == value
    assert "\n" not in str(info.value)


def test_errors_use_the_key_the_user_wrote() -> None:
    with pytest.raises(ConfigError) as info:
        parse_flow_settings(
            {"enabled": "true", "topics.exclude": "["}, key_names={"topics.exclude": "A->B.topics.exclude"}
        )
    assert str(info.value).startswith("A->B.topics.exclude='['")
    assert info.value.key == "A->B.topics.exclude"


def test_unrelated_keys_are_ignored() -> None:
    assert parse_flow_settings({"strait.something": "x", "enabled": "true"}) == FlowSettings()
