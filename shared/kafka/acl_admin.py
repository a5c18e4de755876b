"""Topic ACLs on one cluster as plain AclBindingSpecs.

Listing goes over aiokafka's protocol client: the DescribeAcls response carries the answer we need in its
error code (SECURITY_DISABLED: no authorizer; CLUSTER_AUTHORIZATION_FAILED: not allowed to look), which
librdkafka drops, and asking librdkafka's DescribeCluster instead aborts the process (a failed assertion
in rd_kafka_admin_response_parse) when the cluster answers a metadata request with an error, as it can
while it recovers from an outage. Creating stays on confluent-kafka (blocking; use asyncio.to_thread).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from aiokafka.errors import KafkaError as AioKafkaError
from aiokafka.protocol.admin import DescribeAclsRequest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)

from shared.errors import StraitError
from shared.filters import AclBindingSpec
from shared.kafka.cluster_errors import cluster_error
from shared.kafka.error_classes import ErrorClass, error_class
from shared.kafka.error_codes import SECURITY_DISABLED
from shared.kafka.factories import aio_client, confluent_admin

_DESCRIBE_ANY_TOPIC_ACL = DescribeAclsRequest(
    resource_type=ResourceType.TOPIC.value,
    resource_name=None,  # null: any name, principal or host
    resource_pattern_type_filter=ResourcePatternType.ANY.value,
    principal=None,
    host=None,
    operation=AclOperation.ANY.value,
    permission_type=AclPermissionType.ANY.value,
)


class AclAdmin:
    """Describe and create topic ACL bindings on the cluster `alias`."""

    def __init__(self, alias: str, props: Mapping[str, str], *, timeout_s: float) -> None:
        self.alias = alias
        self._props = dict(props)
        self._timeout_s = timeout_s
        self._admin = confluent_admin(props)

    async def describe_topic_acls(self) -> list[AclBindingSpec] | None:
        """Every TOPIC binding (any pattern type); None when the cluster has no authorizer.

        A short-lived connection per call: rounds are minutes apart and nothing is cached between them.
        """
        try:
            response = await asyncio.wait_for(self._describe(), self._timeout_s)
        except (AioKafkaError, OSError, TimeoutError) as exc:
            raise cluster_error(exc, cluster=self.alias, operation="describe ACLs", resource="topics") from exc
        code = int(response.error_code)
        if code == SECURITY_DISABLED:  # no authorizer configured on the broker
            return None
        if code:
            # As confluent-kafka names it (CLUSTER_AUTHORIZATION_FAILED: ...), like every other cluster error;
            # the broker's own message is a Java toString of the request.
            error = KafkaException(KafkaError(code, retriable=error_class(code) is ErrorClass.RETRY))
            raise cluster_error(error, cluster=self.alias, operation="describe ACLs", resource="topics")
        return [spec for resource in response.resources for spec in _specs(resource)]

    async def _describe(self) -> Any:
        client = aio_client(self._props, request_timeout_ms=max(1, int(self._timeout_s * 1000)))
        try:
            await client.bootstrap()
            return await client.send(client.get_random_node(), _DESCRIBE_ANY_TOPIC_ACL)
        finally:
            await client.close()

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


def _specs(resource: Any) -> list[AclBindingSpec]:
    """The bindings of one DescribeAcls response resource (protocol enum values as names)."""
    resource_type, name, pattern_type, acls = resource
    return [
        AclBindingSpec(
            resource_type=ResourceType(resource_type).name,
            resource_name=name,
            pattern_type=ResourcePatternType(pattern_type).name,
            principal=principal,
            host=host,
            operation=AclOperation(operation).name,
            permission_type=AclPermissionType(permission).name,
        )
        for principal, host, operation, permission in acls
    ]


def describe(spec: AclBindingSpec) -> str:
    """A short human form: `topic A.orders (LITERAL): ALLOW User:alice READ from *`."""
    return (
        f"{spec.resource_type.lower()} {spec.resource_name} ({spec.pattern_type}): "
        f"{spec.permission_type} {spec.principal} {spec.operation} from {spec.host}"
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
