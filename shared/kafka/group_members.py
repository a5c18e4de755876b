"""Whether a consumer group has live members on a cluster (blocking, confluent-kafka; use asyncio.to_thread)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ConsumerGroupDescription

from shared.kafka.cluster_errors import cluster_error, kafka_error_code
from shared.retry import Backoff, retry_blocking

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

    def ask() -> ConsumerGroupDescription:
        future = admin.describe_consumer_groups([group], request_timeout=timeout_s)[group]
        # The stubs say a dict; confluent-kafka documents (and returns) one description per group.
        return cast(ConsumerGroupDescription, future.result(timeout=timeout_s + 5))

    try:
        description = retry_blocking(
            ask,
            backoff=Backoff(_RETRY_S),
            within_s=timeout_s,
            retry_on=lambda exc: kafka_error_code(exc) in _COORDINATOR_BUSY,
        )
    except KafkaException as exc:
        if kafka_error_code(exc) == _GROUP_ABSENT:
            return GroupMembership(group, "dead", 0)
        raise cluster_error(exc, cluster=cluster, operation="describe consumer group", resource=group) from exc
    state = getattr(description.state, "name", str(description.state)).lower()
    return GroupMembership(group, state, len(description.members or ()))
