"""Whether a consumer group has live members on a cluster (blocking, confluent-kafka; use asyncio.to_thread)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import cast

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ConsumerGroupDescription

from shared.kafka.cluster_errors import cluster_error, kafka_error_code

_GROUP_ABSENT = getattr(KafkaError, "GROUP_ID_NOT_FOUND", 69)
# Answers while the group coordinator moves or loads (e.g. the first group call on a new cluster): try again.
_COORDINATOR_BUSY = frozenset(
    {KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError.COORDINATOR_NOT_AVAILABLE}
)
_RETRY_S = 0.5


@dataclass(frozen=True, slots=True)
class GroupMembership:
    """A group as its coordinator sees it: `state` in lower case ("empty", "stable", "dead", ...)."""

    group: str
    state: str
    members: int

    @property
    def active(self) -> bool:
        """True when the group has members, which would reject or overwrite offsets changed from outside."""
        return self.members > 0


def describe_group(admin: AdminClient, group: str, *, cluster: str, timeout_s: float = 30) -> GroupMembership:
    """The group's state and member count; a group that does not exist is "dead" with no members."""
    deadline = time.monotonic() + timeout_s
    while True:
        future = admin.describe_consumer_groups([group], request_timeout=timeout_s)[group]
        try:
            # The stubs say a dict; confluent-kafka documents (and returns) one description per group.
            description = cast(ConsumerGroupDescription, future.result(timeout=timeout_s + 5))
        except KafkaException as exc:
            code = kafka_error_code(exc)
            if code == _GROUP_ABSENT:
                return GroupMembership(group, "dead", 0)
            if code in _COORDINATOR_BUSY and time.monotonic() + _RETRY_S < deadline:
                time.sleep(_RETRY_S)
                continue
            raise cluster_error(exc, cluster=cluster, operation="describe consumer group", resource=group) from exc
        state = getattr(description.state, "name", str(description.state)).lower()
        return GroupMembership(group, state, len(description.members or ()))
