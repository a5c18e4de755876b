"""Which ACL bindings the target needs: MM2's topic ACL rules applied to the source's bindings, minus what exists.

A source binding is copied when the ACL filter keeps it (TOPIC, LITERAL, not ALLOW WRITE) and its topic is one
the flow replicates; it lands on the remote topic, with ALLOW ALL turned into ALLOW READ. The literal
wildcard `*` names no topic, so it is never copied. Sync is additive: nothing is ever deleted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from shared.filters import AclBindingSpec, AclFilter, DefaultAclFilter, to_remote_acl

WILDCARD = "*"


def _order(binding: AclBindingSpec) -> tuple[str, ...]:
    return (
        binding.resource_name,
        binding.principal,
        binding.host,
        binding.operation,
        binding.permission_type,
        binding.resource_type,
        binding.pattern_type,
    )


def remote_acls(
    source: Iterable[AclBindingSpec],
    *,
    should_replicate_topic: Callable[[str], bool],
    remote_topic: Callable[[str], str],
    acl_filter: AclFilter | None = None,
) -> list[AclBindingSpec]:
    """The target bindings the source's bindings call for, without duplicates, in a stable order."""
    rule = acl_filter or DefaultAclFilter()
    wanted: set[AclBindingSpec] = set()
    for binding in source:
        if binding.resource_name == WILDCARD or not rule.should_replicate_acl(binding):
            continue
        if should_replicate_topic(binding.resource_name):
            wanted.add(to_remote_acl(binding, remote_topic(binding.resource_name)))
    return sorted(wanted, key=_order)


def missing_acls(wanted: Iterable[AclBindingSpec], existing: Iterable[AclBindingSpec]) -> list[AclBindingSpec]:
    """The wanted bindings the target does not have yet."""
    present = set(existing)
    return [binding for binding in wanted if binding not in present]
