"""ACL filter and conversion: MirrorSourceConnectorTest's testAclFiltering and testAclTransformation."""

from __future__ import annotations

import pytest

from shared.filters import AclBindingSpec, AclFilter, DefaultAclFilter, to_remote_acl


def binding(
    operation: str,
    permission_type: str = "ALLOW",
    *,
    resource_type: str = "TOPIC",
    pattern_type: str = "LITERAL",
    name: str = "test_topic",
) -> AclBindingSpec:
    return AclBindingSpec(
        resource_type=resource_type,
        resource_name=name,
        pattern_type=pattern_type,
        principal="User:kafka",
        host="*",
        operation=operation,
        permission_type=permission_type,
    )


def test_acl_filtering() -> None:
    acl_filter = DefaultAclFilter()
    assert not acl_filter.should_replicate_acl(binding("WRITE", "ALLOW"))
    assert acl_filter.should_replicate_acl(binding("ALL", "ALLOW"))
    assert acl_filter.should_replicate_acl(binding("READ", "ALLOW"))
    assert acl_filter.should_replicate_acl(binding("WRITE", "DENY"))
    assert acl_filter.should_replicate_acl(binding("DESCRIBE", "DENY"))


@pytest.mark.parametrize(
    ("resource_type", "pattern_type"),
    [("GROUP", "LITERAL"), ("CLUSTER", "LITERAL"), ("TRANSACTIONAL_ID", "LITERAL"), ("TOPIC", "PREFIXED")],
)
def test_only_literal_topic_acls(resource_type: str, pattern_type: str) -> None:
    acl = binding("READ", resource_type=resource_type, pattern_type=pattern_type)
    assert not DefaultAclFilter().should_replicate_acl(acl)


def test_allow_all_becomes_allow_read() -> None:
    remote = to_remote_acl(binding("ALL", "ALLOW"), "source.test_topic")
    assert remote == AclBindingSpec("TOPIC", "source.test_topic", "LITERAL", "User:kafka", "*", "READ", "ALLOW")


def test_deny_all_is_kept() -> None:
    remote = to_remote_acl(binding("ALL", "DENY"), "source.test_topic")
    assert remote.operation == "ALL"
    assert remote.permission_type == "DENY"
    assert remote.resource_name == "source.test_topic"


@pytest.mark.parametrize(("operation", "permission"), [("READ", "ALLOW"), ("DESCRIBE", "ALLOW"), ("READ", "DENY")])
def test_other_acls_copied_with_remote_name(operation: str, permission: str) -> None:
    source = binding(operation, permission)
    remote = to_remote_acl(source, "A.test_topic")
    assert remote.operation == operation
    assert remote.permission_type == permission
    assert (remote.principal, remote.host) == (source.principal, source.host)
    assert (remote.resource_type, remote.resource_name, remote.pattern_type) == ("TOPIC", "A.test_topic", "LITERAL")


def test_lower_case_enum_names_are_rejected() -> None:
    with pytest.raises(ValueError, match="operation"):
        binding("read")


def test_is_an_acl_filter() -> None:
    assert isinstance(DefaultAclFilter(), AclFilter)
