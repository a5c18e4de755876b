"""ACL filter and conversion for topic ACL sync (MirrorSourceConnector's ACL rules), client-independent."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class AclBindingSpec:
    """An ACL binding as plain data; enum fields use Kafka's enum names in upper case.

    resource_type: TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, ...; pattern_type: LITERAL, PREFIXED, ...;
    operation: ALL, READ, WRITE, CREATE, DESCRIBE, ...; permission_type: ALLOW or DENY.
    """

    resource_type: str
    resource_name: str
    pattern_type: str
    principal: str
    host: str
    operation: str
    permission_type: str

    def __post_init__(self) -> None:
        # Adapters translate client enums by name; a lower-case name would silently fail every comparison.
        for name in ("resource_type", "pattern_type", "operation", "permission_type"):
            value = getattr(self, name)
            if value != value.upper():
                raise ValueError(f"AclBindingSpec.{name} must be an upper-case Kafka enum name, got {value!r}")


@runtime_checkable
class AclFilter(Protocol):
    """Decides whether a source ACL binding is copied to the target."""

    def should_replicate_acl(self, binding: AclBindingSpec) -> bool:
        """True if `binding` should be replicated (the topic itself is checked separately)."""
        ...


class DefaultAclFilter:
    """MM2's rule: only TOPIC resources with LITERAL patterns, and never ALLOW WRITE.

    The caller must also require that the bound topic passes the flow's topic rule
    (`should_replicate_topic` in `shared.replication_policy`), as MM2 does.
    """

    def should_replicate_acl(self, binding: AclBindingSpec) -> bool:
        """True for a TOPIC/LITERAL binding that is not ALLOW WRITE."""
        if binding.resource_type != "TOPIC" or binding.pattern_type != "LITERAL":
            return False
        return not (binding.permission_type == "ALLOW" and binding.operation == "WRITE")


def to_remote_acl(binding: AclBindingSpec, remote_topic: str) -> AclBindingSpec:
    """The target binding for `binding`: a TOPIC/LITERAL ACL on `remote_topic`; ALLOW ALL becomes ALLOW READ.

    Everything else (DENY included) keeps its principal, host, operation and permission.
    """
    operation = binding.operation
    if binding.permission_type == "ALLOW" and operation == "ALL":
        # Only the mirror may write to a remote topic, so a source-side ALL grants read access downstream.
        operation = "READ"
    return replace(
        binding, resource_type="TOPIC", resource_name=remote_topic, pattern_type="LITERAL", operation=operation
    )
