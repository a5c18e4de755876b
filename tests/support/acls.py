"""Read topic ACLs the way acl-sync does, from synchronous test code (inside or outside an event loop)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor

from shared.filters import AclBindingSpec
from shared.kafka.acl_admin import AclAdmin


def topic_acls(alias: str, props: Mapping[str, str]) -> list[AclBindingSpec] | None:
    """Every topic binding on the cluster (None without an authorizer), on a thread with its own loop."""
    admin = AclAdmin(alias, props, timeout_s=30)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, admin.describe_topic_acls()).result()


def acls_on(alias: str, props: Mapping[str, str], topic: str) -> set[AclBindingSpec]:
    """Every binding on `topic` (literal or prefixed); the cluster must have an authorizer."""
    listed = topic_acls(alias, props)
    assert listed is not None, f"cluster {alias} has no ACL authorizer"
    return {binding for binding in listed if binding.resource_name == topic}
