"""Replication policies, cycle detection and the topic rule: MM2's test vectors plus separator edge cases."""

from __future__ import annotations

import pytest

from shared.errors import ConfigError
from shared.filters.topic import DefaultTopicFilter
from shared.replication_policy import (
    DefaultReplicationPolicy,
    IdentityReplicationPolicy,
    ReplicationPolicy,
    is_cycle,
    replication_policy_for,
    should_replicate_topic,
)

DEFAULT = DefaultReplicationPolicy()


class _AcceptAll:
    def should_replicate_topic(self, topic: str) -> bool:
        return True


class _AcceptNone:
    def should_replicate_topic(self, topic: str) -> bool:
        return False


def is_remote(policy: ReplicationPolicy, topic: str) -> bool:
    """MirrorClient's notion of a remote topic."""
    return not policy.is_internal_topic(topic) and policy.topic_source(topic) is not None


# --- DefaultReplicationPolicy ----------------------------------------------------------------


def test_format_remote_topic() -> None:
    assert DEFAULT.format_remote_topic("source1", "topic1") == "source1.topic1"
    assert DEFAULT.format_remote_topic("B", "A.orders") == "B.A.orders"


@pytest.mark.parametrize(
    ("topic", "source", "upstream", "original"),
    [
        ("topic1", None, None, "topic1"),
        ("source1.topic1", "source1", "topic1", "topic1"),
        ("B.A.orders", "B", "A.orders", "orders"),
        ("source3.source2.source1.topic", "source3", "source2.source1.topic", "topic"),
        # Java's split drops trailing empty parts: `a.` has one part and is not remote.
        ("a.", None, None, "a."),
        ("a..", None, None, "a.."),
        ("..", None, None, ".."),
        ("", None, None, ""),
        # Leading empty parts are kept: `.a` comes from the cluster with the empty alias.
        (".a", "", "a", "a"),
        ("..a", "", ".a", "a"),
        ("a..b", "a", ".b", "b"),
        ("A.b.", "A", "b.", "b."),
    ],
)
def test_default_topic_source_upstream_original(
    topic: str, source: str | None, upstream: str | None, original: str
) -> None:
    assert DEFAULT.topic_source(topic) == source
    assert DEFAULT.upstream_topic(topic) == upstream
    assert DEFAULT.original_topic(topic) == original


@pytest.mark.parametrize("separator", ["_", "__", "-", "::"])
def test_custom_separator_round_trip(separator: str) -> None:
    policy = DefaultReplicationPolicy(separator=separator)
    remote = policy.format_remote_topic("B", policy.format_remote_topic("A", "orders"))
    assert remote == f"B{separator}A{separator}orders"
    assert policy.topic_source(remote) == "B"
    assert policy.upstream_topic(remote) == f"A{separator}orders"
    assert policy.original_topic(remote) == "orders"
    # A dotted name is not remote under another separator.
    assert policy.topic_source("A.orders") is None
    assert policy.topic_source(f"orders{separator}") is None


def test_double_underscore_separator_splits_left_to_right() -> None:
    policy = DefaultReplicationPolicy(separator="__")
    assert policy.topic_source("a___b") == "a"
    assert policy.upstream_topic("a___b") == "_b"
    assert policy.topic_source("__a") == ""


def test_remote_topics_vectors() -> None:
    topics = ["topic1", "source1.topic4", "source1.source2.topic5", "source3.source4.source5.topic6"]
    assert [t for t in topics if is_remote(DEFAULT, t)] == topics[1:]
    underscore = DefaultReplicationPolicy(separator="__")
    topics = ["topic1", "source1__topic4", "source1__source2__topic5", "source3__source4__source5__topic6"]
    assert [t for t in topics if is_remote(underscore, t)] == topics[1:]


def test_internal_topics() -> None:
    assert DEFAULT.is_internal_topic("__consumer_offsets")
    assert DEFAULT.is_internal_topic(".hiddentopic")
    assert DEFAULT.is_internal_topic("mm2-offsets.CLUSTER.internal")
    assert DEFAULT.is_internal_topic("mm2-offsets-CLUSTER-internal")
    assert not DEFAULT.is_internal_topic("mm2-offsets_CLUSTER_internal")
    assert not DEFAULT.is_internal_topic("orders")
    assert not DEFAULT.is_internal_topic("heartbeats")


def test_internal_topic_with_custom_separator() -> None:
    policy = DefaultReplicationPolicy(separator="_")
    # MM2-internal under the separator, and Connect's suffixes still count.
    assert policy.is_mm2_internal_topic("mm2-offset-syncs_B_internal")
    assert policy.is_internal_topic("mm2-offset-syncs_B_internal")
    assert policy.is_internal_topic("connect-offsets.internal")
    assert not DEFAULT.is_mm2_internal_topic("mm2-offset-syncs_B_internal")


def test_default_internal_topic_names() -> None:
    assert DEFAULT.offset_syncs_topic("B") == "mm2-offset-syncs.B.internal"
    assert DEFAULT.checkpoints_topic("A") == "A.checkpoints.internal"
    assert DEFAULT.heartbeats_topic() == "heartbeats"


@pytest.mark.parametrize(
    ("enabled", "offset_syncs", "checkpoints"),
    [
        (False, "mm2-offset-syncs.CLUSTER.internal", "CLUSTER.checkpoints.internal"),
        (True, "mm2-offset-syncs__CLUSTER__internal", "CLUSTER__checkpoints__internal"),
    ],
)
def test_internal_topic_separator_enabled(enabled: bool, offset_syncs: str, checkpoints: str) -> None:
    policy = DefaultReplicationPolicy(separator="__", internal_topic_separator_enabled=enabled)
    assert policy.offset_syncs_topic("CLUSTER") == offset_syncs
    assert policy.checkpoints_topic("CLUSTER") == checkpoints
    assert policy.is_checkpoints_topic(checkpoints)
    assert policy.is_mm2_internal_topic(offset_syncs)
    # The heartbeats topic never takes the separator.
    assert policy.heartbeats_topic() == "heartbeats"


def test_is_heartbeats_topic() -> None:
    assert DEFAULT.is_heartbeats_topic("heartbeats")
    assert DEFAULT.is_heartbeats_topic("source1.heartbeats")
    assert DEFAULT.is_heartbeats_topic("source2.source1.heartbeats")
    assert not DEFAULT.is_heartbeats_topic("heartbeats!")
    assert not DEFAULT.is_heartbeats_topic("!heartbeats")
    assert not DEFAULT.is_heartbeats_topic("source1heartbeats")
    assert not DEFAULT.is_heartbeats_topic("source1-heartbeats")


def test_is_checkpoints_topic() -> None:
    assert DEFAULT.is_checkpoints_topic("source1.checkpoints.internal")
    assert DEFAULT.is_checkpoints_topic("source2.source1.checkpoints.internal")
    assert not DEFAULT.is_checkpoints_topic("checkpoints.internal")
    assert not DEFAULT.is_checkpoints_topic("checkpoints-internal")
    assert not DEFAULT.is_checkpoints_topic("checkpoints.internal!")
    assert not DEFAULT.is_checkpoints_topic("!checkpoints.internal")
    assert not DEFAULT.is_checkpoints_topic("source1checkpointsinternal")


def test_custom_heartbeats_topic_name() -> None:
    policy = DefaultReplicationPolicy(heartbeats_topic_name="beats")
    assert policy.heartbeats_topic() == "beats"
    assert policy.is_heartbeats_topic("A.beats")
    assert not policy.is_heartbeats_topic("A.heartbeats")


def test_empty_separator_is_rejected() -> None:
    with pytest.raises(ConfigError) as info:
        DefaultReplicationPolicy(separator="")
    assert info.value.key == "replication.policy.separator"


# --- IdentityReplicationPolicy ---------------------------------------------------------------


def test_identity_keeps_names_except_heartbeats() -> None:
    policy = IdentityReplicationPolicy(source_cluster_alias="primary")
    assert policy.format_remote_topic("primary", "topic1") == "topic1"
    assert policy.topic_source("topic1") == "primary"
    assert policy.upstream_topic("topic1") == "topic1"
    assert policy.original_topic("topic1") == "topic1"
    assert policy.format_remote_topic("backup", "heartbeats") == "backup.heartbeats"
    assert policy.topic_source("backup.heartbeats") == "backup"
    assert policy.upstream_topic("backup.heartbeats") == "heartbeats"
    assert policy.original_topic("B.A.heartbeats") == "heartbeats"
    assert policy.is_heartbeats_topic("B.A.heartbeats")


def test_identity_without_source_alias() -> None:
    policy = IdentityReplicationPolicy()
    assert policy.topic_source("A.orders") is None
    assert policy.upstream_topic("A.orders") == "A.orders"
    assert policy.original_topic("A.orders") == "A.orders"


def test_identity_heartbeat_suffix_rule() -> None:
    # MM2 treats any name ending in "heartbeats" as a heartbeat name.
    policy = IdentityReplicationPolicy(source_cluster_alias="primary")
    assert policy.topic_source("myheartbeats") is None
    assert policy.format_remote_topic("B", "myheartbeats") == "B.myheartbeats"


def test_identity_remote_topics() -> None:
    policy = IdentityReplicationPolicy(source_cluster_alias="source")
    assert is_remote(policy, "topic1")
    assert is_remote(policy, "backup.heartbeats")
    assert not is_remote(policy, "heartbeats")


def test_identity_upstream_clusters_from_heartbeats() -> None:
    policy = IdentityReplicationPolicy(source_cluster_alias="source")
    sources: set[str] = set()
    for topic in [
        "heartbeats",
        "source1.heartbeats",
        "source1.source2.heartbeats",
        "source3.source4.source5.heartbeats",
    ]:
        current: str | None = topic
        while current is not None and (source := policy.topic_source(current)) is not None:
            sources.add(source)
            current = policy.upstream_topic(current)
    assert sources == {"source1", "source2", "source3", "source4", "source5"}


def test_identity_internal_names_follow_the_separator() -> None:
    policy = IdentityReplicationPolicy(separator="_")
    assert policy.offset_syncs_topic("B") == "mm2-offset-syncs_B_internal"
    assert policy.checkpoints_topic("A") == "A_checkpoints_internal"


# --- factory ---------------------------------------------------------------------------------


def test_factory() -> None:
    default = replication_policy_for("default", separator="_", internal_topic_separator_enabled=False)
    assert isinstance(default, DefaultReplicationPolicy)
    assert not isinstance(default, IdentityReplicationPolicy)
    assert default.format_remote_topic("A", "t") == "A_t"
    assert default.offset_syncs_topic("B") == "mm2-offset-syncs.B.internal"
    identity = replication_policy_for(
        "identity", separator=".", internal_topic_separator_enabled=True, source_cluster_alias="A"
    )
    assert isinstance(identity, IdentityReplicationPolicy)
    assert identity.topic_source("t") == "A"
    assert isinstance(identity, ReplicationPolicy)


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("Default", DefaultReplicationPolicy),
        ("org.apache.kafka.connect.mirror.DefaultReplicationPolicy", DefaultReplicationPolicy),
        ("IdentityReplicationPolicy", IdentityReplicationPolicy),
        ("org.apache.kafka.connect.mirror.IdentityReplicationPolicy", IdentityReplicationPolicy),
    ],
)
def test_factory_accepts_mm2_class_names(kind: str, expected: type) -> None:
    assert type(replication_policy_for(kind)) is expected


def test_factory_rejects_unknown_kind() -> None:
    with pytest.raises(ConfigError) as info:
        replication_policy_for("com.example.Custom", separator=".", internal_topic_separator_enabled=True)
    assert info.value.key == "replication.policy.class"
    assert info.value.value == "com.example.Custom"


# --- cycles and the full topic rule (MirrorSourceConnectorTest) ------------------------------


@pytest.mark.parametrize(
    ("topic", "cycle"),
    [
        ("target.topic1", True),
        ("target.source.topic1", True),
        ("source.target.topic1", True),
        ("target.source.target.topic1", True),
        ("source.target.source.topic1", True),
        ("topic1", False),
        ("source.topic1", False),
        ("other.source.topic1", False),
        ("B.A.orders", False),
        (".target", False),
        ("target.", False),
    ],
)
def test_is_cycle_default(topic: str, cycle: bool) -> None:
    assert is_cycle(DEFAULT, topic, "target") is cycle


def test_is_cycle_with_custom_separator() -> None:
    policy = DefaultReplicationPolicy(separator="_")
    assert is_cycle(policy, "B_A_orders", "A")
    assert not is_cycle(policy, "B.A.orders", "A")


def _default_rule(topic: str) -> bool:
    return should_replicate_topic(DEFAULT, topic, target_alias="target", topic_filter=_AcceptAll())


def test_no_cycles() -> None:
    for topic in [
        "target.topic1",
        "target.source.topic1",
        "source.target.topic1",
        "target.source.target.topic1",
        "source.target.source.topic1",
    ]:
        assert not _default_rule(topic), topic
    assert _default_rule("topic1")
    assert _default_rule("source.topic1")


def test_identity_replication_allows_cycles_except_heartbeats() -> None:
    policy = IdentityReplicationPolicy()

    def rule(topic: str) -> bool:
        return should_replicate_topic(policy, topic, target_alias="target", topic_filter=_AcceptAll())

    for topic in [
        "target.topic1",
        "target.source.topic1",
        "source.target.topic1",
        "target.source.target.topic1",
        "source.target.source.topic1",
        "topic1",
        "othersource.topic1",
        "heartbeats",
        "othersource.heartbeats",
    ]:
        assert rule(topic), topic
    for topic in [
        "target.heartbeats",
        "target.source.heartbeats",
        "source.target.heartbeats",
        "target.source.target.heartbeats",
        "source.target.source.heartbeats",
    ]:
        assert not rule(topic), topic


def test_identity_with_source_alias_is_not_a_cycle() -> None:
    # MM2's connectors configure the identity policy with the flow's source alias.
    policy = IdentityReplicationPolicy(source_cluster_alias="source")
    assert not is_cycle(policy, "orders", "target")
    assert is_cycle(IdentityReplicationPolicy(source_cluster_alias="target"), "orders", "target")


def test_replicates_heartbeats_despite_filter() -> None:
    policy = DefaultReplicationPolicy()
    assert should_replicate_topic(policy, "heartbeats", target_alias="target", topic_filter=_AcceptNone())
    assert should_replicate_topic(policy, "us-west.heartbeats", target_alias="target", topic_filter=_AcceptNone())
    underscore = DefaultReplicationPolicy(separator="_")
    assert should_replicate_topic(underscore, "heartbeats", target_alias="target", topic_filter=_AcceptNone())
    assert not should_replicate_topic(
        underscore, "us-west.heartbeats", target_alias="target", topic_filter=_AcceptNone()
    )


def test_does_not_replicate_heartbeats_when_disabled() -> None:
    for topic in ["heartbeats", "us-west.heartbeats"]:
        assert not should_replicate_topic(
            DEFAULT,
            topic,
            target_alias="target",
            topic_filter=DefaultTopicFilter(include=["orders"], exclude=[]),
            heartbeats_replication_enabled=False,
        )
        assert should_replicate_topic(
            DEFAULT, topic, target_alias="target", topic_filter=_AcceptAll(), heartbeats_replication_enabled=False
        )


def test_heartbeats_of_the_target_are_a_cycle() -> None:
    assert not should_replicate_topic(DEFAULT, "target.heartbeats", target_alias="target", topic_filter=_AcceptAll())


def test_internal_topics_are_never_replicated() -> None:
    for topic in ["__consumer_offsets", ".hidden", "mm2-offset-syncs.target.internal", "connect-configs-internal"]:
        assert not should_replicate_topic(DEFAULT, topic, target_alias="target", topic_filter=_AcceptAll()), topic
