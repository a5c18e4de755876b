"""Planning ACL sync: MM2's topic ACL rules on a flow's source bindings, and what the target still lacks."""

from __future__ import annotations

from shared.acl_rules import missing_acls, remote_acls
from shared.config import FlowSettings
from shared.filters import AclBindingSpec
from shared.flow_topics import FlowTopics

RULE = FlowTopics.for_settings(FlowSettings(topics=("orders", "payments", "B\\..*")), source="A", target="B")


def acl(
    name: str,
    operation: str,
    permission: str = "ALLOW",
    *,
    principal: str = "User:alice",
    pattern: str = "LITERAL",
    resource: str = "TOPIC",
) -> AclBindingSpec:
    return AclBindingSpec(resource, name, pattern, principal, "*", operation, permission)


def plan(*bindings: AclBindingSpec) -> list[AclBindingSpec]:
    return remote_acls(bindings, should_replicate_topic=RULE.should_replicate, remote_topic=RULE.remote_topic)


def test_allowed_reads_and_denies_are_copied_to_the_remote_topic() -> None:
    assert plan(acl("orders", "READ"), acl("orders", "WRITE", "DENY"), acl("orders", "DESCRIBE")) == [
        acl("A.orders", "DESCRIBE"),
        acl("A.orders", "READ"),
        acl("A.orders", "WRITE", "DENY"),
    ]


def test_allow_write_is_dropped_and_allow_all_becomes_allow_read() -> None:
    assert plan(acl("orders", "WRITE"), acl("payments", "ALL")) == [acl("A.payments", "READ")]


def test_deny_all_is_copied_as_it_is() -> None:
    assert plan(acl("orders", "ALL", "DENY")) == [acl("A.orders", "ALL", "DENY")]


def test_only_literal_topic_bindings_of_replicated_topics_are_copied() -> None:
    assert (
        plan(
            acl("orders", "READ", pattern="PREFIXED"),
            acl("orders", "READ", resource="GROUP"),
            acl("billing", "READ"),  # not in the flow's topics
            acl("B.orders", "READ"),  # came from B: would go back
            acl("orders.internal", "READ"),  # internal
            acl("*", "READ"),  # the wildcard names no topic
        )
        == []
    )


def test_one_binding_per_target_acl_even_when_two_source_acls_map_to_it() -> None:
    assert plan(acl("orders", "ALL"), acl("orders", "READ")) == [acl("A.orders", "READ")]


def test_only_bindings_the_target_lacks_are_created() -> None:
    wanted = plan(acl("orders", "READ"), acl("orders", "READ", principal="User:bob"))
    existing = [acl("A.orders", "READ"), acl("A.other", "READ", principal="User:bob")]
    assert missing_acls(wanted, existing) == [acl("A.orders", "READ", principal="User:bob")]
