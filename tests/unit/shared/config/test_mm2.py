"""MirrorMakerConfig: clusters, flows, precedence, accepted keys and every validation error."""

from __future__ import annotations

import pytest

from shared.config import MirrorMakerConfig, parse_mm2_config
from shared.errors import ConfigError

BASE = {"clusters": "A, B", "A.bootstrap.servers": "a:9092", "B.bootstrap.servers": "b:9092"}


def parse(**extra: str) -> MirrorMakerConfig:
    return parse_mm2_config({**BASE, **extra}, env={})


def parse_with(props: dict[str, str]) -> MirrorMakerConfig:
    return parse_mm2_config({**BASE, **props}, env={})


def error_of(props: dict[str, str], *, base: bool = True) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_mm2_config({**BASE, **props} if base else props, env={})
    assert "\n" not in str(info.value)
    return info.value


def test_every_ordered_pair_is_a_flow_in_clusters_order() -> None:
    config = parse_mm2_config(
        {"clusters": "C,A,B", **{f"{x}.bootstrap.servers": f"{x.lower()}:9092" for x in "ABC"}}, env={}
    )
    assert list(config.clusters) == ["C", "A", "B"]
    assert [flow.name for flow in config.flows] == ["C->A", "C->B", "A->C", "A->B", "B->C", "B->A"]


def test_flows_are_disabled_unless_enabled() -> None:
    config = parse_with({"A->B.enabled": "true", "B->A.enabled": "FALSE"})
    assert [(flow.name, flow.enabled) for flow in config.flows] == [("A->B", True), ("B->A", False)]
    assert [flow.name for flow in config.enabled_flows] == ["A->B"]


def test_top_level_enabled_enables_every_pair_as_in_mm2() -> None:
    config = parse_with({"enabled": "true", "B->A.enabled": "false"})
    assert [flow.name for flow in config.enabled_flows] == ["A->B"]


def test_active_active_cycle_is_valid() -> None:
    config = parse_with({"A->B.enabled": "true", "B->A.enabled": "true"})
    assert len(config.enabled_flows) == 2


def test_heartbeats_run_for_disabled_flows_unless_turned_off() -> None:
    config = parse_with({"A->B.enabled": "true", "A->B.emit.heartbeats.enabled": "false"})
    assert [flow.name for flow in config.heartbeat_flows] == ["B->A"]


def test_duplicate_aliases_collapse() -> None:
    assert list(parse_with({"clusters": "A,B,A"}).clusters) == ["A", "B"]


def test_precedence_flow_over_top_level_over_default() -> None:
    config = parse_with(
        {
            "replication.factor": "1",
            "topics": "orders.*",
            "A->B.topics": "payments.*",
            "A->B.sync.topic.acls.enabled": "false",
        }
    )
    a_to_b, b_to_a = config.flow("A", "B"), config.flow("B", "A")
    assert (a_to_b.settings.topics, b_to_a.settings.topics) == (("payments.*",), ("orders.*",))
    assert a_to_b.settings.replication_factor == b_to_a.settings.replication_factor == 1
    assert (a_to_b.settings.sync_topic_acls_enabled, b_to_a.settings.sync_topic_acls_enabled) == (False, True)
    assert b_to_a.settings.groups == (".*",)
    assert a_to_b.props["topics"] == "payments.*"
    assert b_to_a.props["topics"] == "orders.*"


def test_flow_value_error_names_the_flow_key() -> None:
    error = error_of({"A->B.enabled": "maybe"})
    assert str(error) == "A->B.enabled='maybe': expected true or false"
    assert (error.key, error.value) == ("A->B.enabled", "maybe")


def test_inherited_value_error_names_the_top_level_key() -> None:
    assert str(error_of({"offset.lag.max": "lots"})) == "offset.lag.max='lots': expected an integer >= 0"


def test_legacy_alias_at_flow_level() -> None:
    config = parse_with({"A->B.topics.blacklist": "secret-.*"})
    assert config.flow("A", "B").settings.topics_exclude == ("secret-.*",)


def test_strait_keys_are_kept_without_validation() -> None:
    config = parse_with({"strait.anything.goes": "x", "A->B.strait.flow.thing": "y"})
    assert config.top_level["strait.anything.goes"] == "x"
    assert config.flow("A", "B").props["strait.flow.thing"] == "y"
    assert config.flow("A", "B").props["strait.anything.goes"] == "x"


def test_mm2_and_connect_keys_are_accepted_and_reported_as_ignored() -> None:
    extra = {
        "dedicated.mode.enable.internal.rest": "true",
        "listeners": "http://localhost:8080",
        "rest.advertised.host.name": "h",
        "config.providers": "file,env",
        "config.providers.file.class": "org.apache.kafka.common.config.provider.FileConfigProvider",
        "key.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
        "offset.storage.topic": "mm2-offsets",
        "consumer.max.poll.records": "500",
        "task.shutdown.graceful.timeout.ms": "1000",
        "A->B.source.cluster.alias": "A",
        "A->B.security.protocol": "SSL",
    }
    config = parse_with(extra)
    assert set(config.ignored_keys) == set(extra) - {"config.providers", "config.providers.file.class"}


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"clusters": "A, B"}, "cluster 'A' has no A.bootstrap.servers"),
        ({"clusters": "A, B", "A.bootstrap.servers": "a:9092"}, "cluster 'B' has no B.bootstrap.servers"),
        ({}, "missing required key 'clusters' (a comma-separated list of cluster aliases, e.g. clusters=A,B)"),
        ({"clusters": " , "}, "clusters=' , ': expected a comma-separated list of cluster aliases, e.g. A,B"),
        (
            {"clusters": "A, us.west"},
            "clusters='A, us.west': expected aliases of letters, digits, '_' and '-' only (they prefix topic names),"
            " not 'us.west'",
        ),
        ({"clusters": "A->B"}, "clusters='A->B': expected aliases of letters, digits, '_' and '-' only"),
        ({"clusters": "A, topics"}, "clusters='A, topics': expected aliases that do not clash with MM2 keys"),
    ],
)
def test_cluster_list_errors(props: dict[str, str], message: str) -> None:
    assert str(error_of(props, base=False)).startswith(message)


def test_bad_bootstrap_servers() -> None:
    error = error_of({"B.bootstrap.servers": "b:9092, b2"})
    assert str(error) == "B.bootstrap.servers='b:9092, b2': expected a comma-separated list of host:port"


def test_top_level_bootstrap_servers_is_every_cluster_fallback_as_in_mm2() -> None:
    config = parse_mm2_config(
        {"clusters": "A,B", "bootstrap.servers": "shared:9092", "B.bootstrap.servers": "b:1"}, env={}
    )
    assert config.clusters["A"].bootstrap_servers == "shared:9092"
    assert config.clusters["B"].bootstrap_servers == "b:1"


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("A->C.enabled", "key 'A->C.enabled': flow 'A->C' names unknown cluster alias 'C' (clusters=A,B)"),
        ("C->A.topics", "key 'C->A.topics': flow 'C->A' names unknown cluster alias 'C' (clusters=A,B)"),
        ("A->A.enabled", "key 'A->A.enabled': flow 'A->A' has the same source and target"),
        ("A->B", "key 'A->B' names flow 'A->B' but no setting; expected A->B.<key>"),
        ("A->B.topcs", "unknown key 'A->B.topcs' (did you mean 'A->B.topics'?)"),
        ("A->B.clusters", "unknown key 'A->B.clusters'"),
        ("topcs.exclude", "unknown key 'topcs.exclude' (did you mean 'topics.exclude'?)"),
        ("sync.topic.acl.enabled", "unknown key 'sync.topic.acl.enabled' (did you mean 'sync.topic.acls.enabled'?)"),
        ("C.bootstrap.servers", "key 'C.bootstrap.servers' names unknown cluster alias 'C' (clusters=A,B)"),
        ("C.consumer.group.id", "key 'C.consumer.group.id' names unknown cluster alias 'C' (clusters=A,B)"),
        ("frobnicate", "unknown key 'frobnicate'"),
        ("zz.frobnicate", "unknown key 'zz.frobnicate' ('zz' is not a cluster alias; clusters=A,B)"),
    ],
)
def test_key_errors(key: str, message: str) -> None:
    error = error_of({key: "x"})
    assert str(error) == message
    assert error.key == key


def test_flow_lookup() -> None:
    config = parse()
    assert config.flow("B", "A").name == "B->A"
    assert config.flow_named(" A -> B ").name == "A->B"
    assert config.cluster("B").alias == "B"
    with pytest.raises(ConfigError, match=r"^flow 'A->C' names unknown cluster alias 'C' \(clusters=A,B\)$"):
        config.flow("A", "C")
    with pytest.raises(ConfigError, match="has the same source and target"):
        config.flow("A", "A")
    with pytest.raises(ConfigError, match="expected <source>-><target>"):
        config.flow_named("A=>B")
    with pytest.raises(ConfigError, match=r"unknown cluster alias 'Z' \(clusters=A,B\)"):
        config.cluster("Z")


def test_exactly_once_from_target_cluster_worker_switch() -> None:
    config = parse_with({"B.exactly.once.source.support": "enabled"})
    a_to_b, b_to_a = config.flow("A", "B"), config.flow("B", "A")
    assert (a_to_b.settings.exactly_once_enabled, b_to_a.settings.exactly_once_enabled) == (True, False)
    assert a_to_b.source_consumer_props()["isolation.level"] == "read_committed"
    assert b_to_a.source_consumer_props()["isolation.level"] == "read_committed"  # aborted records never copied


def test_read_uncommitted_is_kept_when_a_flow_asks_for_it() -> None:
    config = parse_with({"A->B.source.consumer.isolation.level": "read_uncommitted"})
    assert config.flow("A", "B").source_consumer_props()["isolation.level"] == "read_uncommitted"
    assert config.flow("B", "A").source_consumer_props()["isolation.level"] == "read_committed"
    assert "exactly.once.source.support" not in config.clusters["B"].client


def test_flow_level_exactly_once_beats_the_worker_switch() -> None:
    config = parse_with({"B.exactly.once.source.support": "enabled", "A->B.exactly.once.support": "disabled"})
    assert config.flow("A", "B").settings.exactly_once_enabled is False


def test_exactly_once_refuses_read_uncommitted() -> None:
    error = error_of({"exactly.once.support": "enabled", "A->B.consumer.isolation.level": "read_uncommitted"})
    assert str(error) == (
        "flow 'A->B': isolation.level='read_uncommitted': exactly-once needs read_committed on the source consumer"
    )


def test_batch_forwarding_is_auto_by_default_and_can_be_forced_either_way() -> None:
    assert parse_with({}).flow("A", "B").settings.copy_batches == "auto"
    config = parse_with({"strait.copy.batches": "off", "A->B.strait.copy.batches": "on"})
    assert config.flow("A", "B").settings.copy_batches == "on"
    assert config.flow("B", "A").settings.copy_batches == "off"
    assert str(error_of({"strait.copy.batches": "sometimes"})).startswith("strait.copy.batches='sometimes'")


def test_forced_batch_forwarding_takes_transforms_and_provenance() -> None:
    """Batches carry a flow's transforms and provenance headers (`shared/reshape/reshaper.py`)."""
    config = parse_with(
        {
            "A->B.enabled": "true",
            "A->B.strait.copy.batches": "on",
            "A->B.transforms": "tag",
            "A->B.transforms.tag.type": "org.apache.kafka.connect.transforms.InsertHeader",
            "A->B.transforms.tag.header": "origin",
            "A->B.transforms.tag.value.literal": "A",
            "strait.provenance.enabled": "true",
        }
    )
    flow = config.flow("A", "B")
    assert (flow.settings.copy_batches, [t.alias for t in flow.transforms]) == ("on", ["tag"])


def test_exactly_once_forwards_batches_too() -> None:
    forced = parse_with({"exactly.once.support": "enabled", "A->B.strait.copy.batches": "on"}).flow("A", "B")
    assert (forced.settings.exactly_once_enabled, forced.settings.copy_batches) == (True, "on")
    assert parse_with({"exactly.once.support": "enabled"}).flow("A", "B").settings.copy_batches == "auto"


def test_invalid_setting_in_a_disabled_flow_is_still_an_error() -> None:
    assert str(error_of({"B->A.tasks.max": "none"})).startswith("B->A.tasks.max='none'")


def test_env_defaults_to_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STRAIT_TEST_B_SERVERS", "b-from-env:9092")
    monkeypatch.setenv("STRAIT_CONFIG_OVERRIDES", "A->B.enabled=true")
    config = parse_mm2_config({**BASE, "B.bootstrap.servers": "${env:STRAIT_TEST_B_SERVERS}"})
    assert config.clusters["B"].bootstrap_servers == "b-from-env:9092"
    assert [flow.name for flow in config.enabled_flows] == ["A->B"]


def test_an_empty_transforms_list_is_no_transform() -> None:
    flow = parse_with({"A->B.enabled": "true", "transforms": " "}).flow_named("A->B")
    assert flow.enabled
    assert flow.transforms == ()
