"""Planning a topic-sync round: which remote topics to create or grow, and which to announce as ready."""

from __future__ import annotations

from services.topic_sync.plan import plan_topics, ready_topics, replicated
from shared.config import FlowSettings
from shared.control import RemoteTopic
from shared.flow_topics import FlowTopics
from shared.kafka.topic_admin import TopicInfo


def remote(topic: str) -> str:
    return f"A.{topic}"


def test_missing_remote_topics_are_created_with_the_source_partition_count() -> None:
    plan = plan_topics({"orders": 6, "payments": 3}, {"A.payments": TopicInfo(3)}, remote)
    assert plan.create == (RemoteTopic(source_topic="orders", remote_topic="A.orders", partitions=6),)
    assert plan.grow == {}
    assert plan.existing == {"payments": "A.payments"}


def test_remote_topics_grow_to_the_source_count_and_never_shrink() -> None:
    target = {"A.orders": TopicInfo(6), "A.payments": TopicInfo(5), "A.audit": TopicInfo(2)}
    plan = plan_topics({"orders": 8, "payments": 3, "audit": 2}, target, remote)
    assert plan.create == ()
    assert plan.grow == {"A.orders": 8}
    assert plan.existing == {"audit": "A.audit", "orders": "A.orders", "payments": "A.payments"}


def test_nothing_is_planned_for_remote_topics_whose_source_topic_is_gone() -> None:
    plan = plan_topics({}, {"A.deleted-on-source": TopicInfo(4)}, remote)
    assert (plan.create, plan.grow, plan.existing) == ((), {}, {})


def test_only_existing_ready_remote_topics_are_announced_with_the_partitions_they_have() -> None:
    source = {"orders": 8, "payments": 3, "new": 2, "leaderless": 1, "bigger-remote": 2}
    target = {
        "A.orders": TopicInfo(6),  # still growing: announce what exists
        "A.payments": TopicInfo(3),
        "A.leaderless": TopicInfo(1, ready=False),
        "A.bigger-remote": TopicInfo(4),  # grown by hand on the target: the source has 2
    }
    assert ready_topics(source, target, remote) == (
        RemoteTopic(source_topic="bigger-remote", remote_topic="A.bigger-remote", partitions=2),
        RemoteTopic(source_topic="orders", remote_topic="A.orders", partitions=6),
        RemoteTopic(source_topic="payments", remote_topic="A.payments", partitions=3),
    )


def test_replicated_topics_follow_mm2_rules_for_the_flow() -> None:
    rule = FlowTopics.for_settings(FlowSettings(topics=("orders.*", "A\\..*")), source="B", target="A")
    source = {
        name: TopicInfo(1)
        for name in (
            "orders",
            "orders-internal",  # excluded by the default topics.exclude
            "heartbeats",  # always mirrored while heartbeats.replication.enabled
            "payments",  # not in `topics`
            "A.orders",  # came from A: would go back where it came from
            "__consumer_offsets",
            "mm2-offset-syncs.A.internal",
        )
    }
    assert replicated(source, rule.should_replicate) == {"orders": 1, "heartbeats": 1}
    assert rule.remote_topic("orders") == "B.orders"


def test_heartbeats_stay_home_when_their_replication_is_off() -> None:
    rule = FlowTopics.for_settings(
        FlowSettings(topics=("orders",), heartbeats_replication_enabled=False), source="B", target="A"
    )
    assert replicated({"orders": TopicInfo(2), "heartbeats": TopicInfo(1)}, rule.should_replicate) == {"orders": 2}


def test_identity_policy_keeps_names_and_uses_the_flow_source_alias() -> None:
    rule = FlowTopics.for_settings(FlowSettings(replication_policy_class="identity"), source="B", target="A")
    assert rule.remote_topic("orders") == "orders"
    assert rule.remote_topic("heartbeats") == "B.heartbeats"
    assert rule.policy.topic_source("orders") == "B"
