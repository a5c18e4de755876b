"""The state and members of a group of any protocol: consumer groups, and Kafka Connect's worker groups.

librdkafka's describe refuses a group whose protocol is not "consumer" (`is not a consumer group (connect)`),
and its listing leaves such groups out; the DescribeGroups request itself answers for every classic group.
Used to tell whether a MirrorMaker 2 worker group still has live members.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from aiokafka.errors import for_code

from shared.kafka.cluster_errors import cluster_error
from shared.kafka.factories import aio_admin
from shared.kafka.group_members import GroupMembership


async def _describe(props: Mapping[str, str], group: str, timeout_s: float) -> GroupMembership:
    admin = aio_admin(props, request_timeout_ms=int(timeout_s * 1000))
    try:
        await admin.start()
        responses = await asyncio.wait_for(admin.describe_consumer_groups([group]), timeout_s)
    finally:
        await admin.close()
    for response in responses:
        for entry in response.groups:
            error_code, group_id, state, _protocol_type, _protocol, members = entry[:6]
            if group_id != group:
                continue
            if error_code:
                raise for_code(error_code)(f"describe group {group}")
            return GroupMembership(group, (state or "dead").lower(), len(members))
    return GroupMembership(group, "dead", 0)


def describe_any_group(props: Mapping[str, str], group: str, *, cluster: str, timeout_s: float) -> GroupMembership:
    """The group's state and member count (a group the cluster does not know is "dead" with none). Blocking."""
    try:
        return asyncio.run(_describe(props, group, timeout_s))
    except Exception as exc:  # aiokafka errors, TimeoutError: unreachable, not allowed to describe the group
        raise cluster_error(exc, cluster=cluster, operation="describe group", resource=group) from exc
