"""Topic ACLs on one cluster as plain AclBindingSpecs (blocking confluent-kafka; use asyncio.to_thread).

A cluster without an authorizer is an answer here (None), not a failure. librdkafka drops the error code
of a DescribeAcls response (SECURITY_DISABLED and CLUSTER_AUTHORIZATION_FAILED both arrive as an empty
listing), so an empty listing is explained by two more questions: may this principal DESCRIBE the cluster
(DescribeCluster's authorized operations), and is `authorizer.class.name` set on the broker.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from typing import Any, cast

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ConfigResource,
    ResourcePatternType,
    ResourceType,
)

from shared.errors import AuthorizationError, StraitError
from shared.filters import AclBindingSpec
from shared.kafka.cluster_errors import cluster_error, kafka_error_code
from shared.kafka.factories import confluent_admin

# None matches any name, principal or host (the client's type stubs only admit str).
_ANY_STRING = cast(str, None)
_ANY_TOPIC_ACL = AclBindingFilter(
    ResourceType.TOPIC,
    _ANY_STRING,
    ResourcePatternType.ANY,
    _ANY_STRING,
    _ANY_STRING,
    AclOperation.ANY,
    AclPermissionType.ANY,
)


class AclAdmin:
    """Describe and create topic ACL bindings on the cluster `alias`."""

    def __init__(self, alias: str, props: Mapping[str, str], *, timeout_s: float) -> None:
        self.alias = alias
        self._timeout_s = timeout_s
        self._admin = confluent_admin(props)

    def describe_topic_acls(self) -> list[AclBindingSpec] | None:
        """Every TOPIC binding (any pattern type); None when the cluster has no authorizer."""
        try:
            bindings = self._admin.describe_acls(_ANY_TOPIC_ACL, request_timeout=self._timeout_s).result()
        except KafkaException as exc:
            if kafka_error_code(exc) == KafkaError.SECURITY_DISABLED:  # should librdkafka ever pass it on
                return None
            raise cluster_error(exc, cluster=self.alias, operation="describe ACLs", resource="topics") from exc
        if bindings:
            return [to_spec(binding) for binding in bindings]
        return self._explain_empty()

    def _explain_empty(self) -> list[AclBindingSpec] | None:
        """[] if the cluster really has no topic ACLs; None without an authorizer; AuthorizationError if refused."""
        try:
            # A future at run time, whatever the type stubs say.
            cluster: Future[Any] = cast(
                "Future[Any]",
                self._admin.describe_cluster(include_authorized_operations=True, request_timeout=self._timeout_s),
            )
            description = cluster.result()
        except KafkaException as exc:
            raise cluster_error(exc, cluster=self.alias, operation="describe cluster", resource="cluster") from exc
        operations = set(description.authorized_operations or ())
        may_describe = bool(operations & {AclOperation.DESCRIBE, AclOperation.ALL})
        node = description.controller if description.controller is not None else description.nodes[0]
        if not self._has_authorizer(str(node.id)):
            return None
        if not may_describe:
            raise AuthorizationError(
                f"cluster {self.alias}: describe ACLs on topics failed: CLUSTER_AUTHORIZATION_FAILED: "
                "the principal may not DESCRIBE the cluster",
                operation="describe ACLs",
                resource="topics",
            )
        return []

    def _has_authorizer(self, broker: str) -> bool:
        """True if `authorizer.class.name` is set on `broker` (or reading it is refused, which needs one)."""
        resource = ConfigResource(ResourceType.BROKER, broker)
        try:
            future = self._admin.describe_configs([resource], request_timeout=self._timeout_s)[resource]
            entry = future.result().get("authorizer.class.name")
        except KafkaException as exc:
            if kafka_error_code(exc) == KafkaError.CLUSTER_AUTHORIZATION_FAILED:
                return True
            raise cluster_error(exc, cluster=self.alias, operation="describe broker configs", resource=broker) from exc
        return entry is not None and bool(entry.value)

    def create_acls(self, bindings: Sequence[AclBindingSpec]) -> dict[AclBindingSpec, StraitError]:
        """Create each binding (creating one that exists is a no-op); the failures, by binding."""
        if not bindings:
            return {}
        by_binding = {to_binding(spec): spec for spec in dict.fromkeys(bindings)}
        try:
            futures = self._admin.create_acls(list(by_binding), request_timeout=self._timeout_s)
        except KafkaException as exc:
            raise cluster_error(exc, cluster=self.alias, operation="create ACLs", resource="topics") from exc
        failures: dict[AclBindingSpec, StraitError] = {}
        for binding, future in futures.items():
            spec = by_binding[binding]
            try:
                future.result()
            except KafkaException as exc:
                failures[spec] = cluster_error(exc, cluster=self.alias, operation="create ACL", resource=describe(spec))
        return failures


def describe(spec: AclBindingSpec) -> str:
    """A short human form: `topic A.orders (LITERAL): ALLOW User:alice READ from *`."""
    return (
        f"{spec.resource_type.lower()} {spec.resource_name} ({spec.pattern_type}): "
        f"{spec.permission_type} {spec.principal} {spec.operation} from {spec.host}"
    )


def to_spec(binding: AclBinding) -> AclBindingSpec:
    """A client binding as plain data (enum names)."""
    return AclBindingSpec(
        resource_type=_name(binding.restype),
        resource_name=binding.name,
        pattern_type=_name(binding.resource_pattern_type),
        principal=binding.principal,
        host=binding.host,
        operation=_name(binding.operation),
        permission_type=_name(binding.permission_type),
    )


def to_binding(spec: AclBindingSpec) -> AclBinding:
    """Plain data as a client binding."""
    return AclBinding(
        ResourceType[spec.resource_type],
        spec.resource_name,
        ResourcePatternType[spec.pattern_type],
        spec.principal,
        spec.host,
        AclOperation[spec.operation],
        AclPermissionType[spec.permission_type],
    )


def _name(value: object) -> str:
    name = getattr(value, "name", value)
    return str(name).upper()
