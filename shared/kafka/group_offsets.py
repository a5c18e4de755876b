"""Consumer groups in bulk on one cluster: list them with their states, read and alter committed offsets.

Blocking (confluent-kafka); call through `asyncio.to_thread`. librdkafka takes one group per offsets
request, so the requests for many groups are all issued before any answer is awaited: they travel
together over the coordinators' connections instead of one round trip after another, and a group's
partitions always come in one answer. Errors name the cluster; one group's failure never hides the others.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from shared.errors import KafkaOperationError
from shared.kafka.cluster_errors import cluster_error, kafka_error_code
from shared.kafka.factories import confluent_admin
from shared.kafka.group_members import GroupMembership, describe_group

# Requests issued before the first answer is awaited; bounds memory with very many groups.
WINDOW = 5000
# What a broker answers when offsets are altered for a group that has members (classic and KIP-848 groups).
_GROUP_BUSY_CODES = frozenset(
    {
        KafkaError.ILLEGAL_GENERATION,
        KafkaError.UNKNOWN_MEMBER_ID,
        KafkaError.REBALANCE_IN_PROGRESS,
        KafkaError.NON_EMPTY_GROUP,
        getattr(KafkaError, "FENCED_MEMBER_EPOCH", 110),
        getattr(KafkaError, "STALE_MEMBER_EPOCH", 113),
    }
)


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    """A group's committed position in one partition and the metadata string committed with it."""

    offset: int
    metadata: str = ""


GroupOffsets = dict[tuple[str, int], CommittedOffset]


@dataclass(frozen=True, slots=True)
class GroupListing:
    """Every group a cluster knows, with its state name (EMPTY, STABLE, DEAD, ...).

    `complete` is False when some broker did not answer: a group missing from `states` may then exist.
    """

    states: dict[str, str]
    complete: bool


class GroupBusyError(KafkaOperationError):
    """Offsets were refused because the group has active members."""


class GroupAdmin:
    """Bulk consumer-group calls on the cluster called `cluster`."""

    def __init__(self, cluster: str, admin: AdminClient, *, timeout_s: float) -> None:
        self.cluster = cluster
        self._admin = admin
        self._timeout_s = timeout_s

    @classmethod
    def connect(cls, cluster: str, props: Mapping[str, str], *, timeout_s: float) -> GroupAdmin:
        """A GroupAdmin with its own admin client for `props` (connects on the first call)."""
        return cls(cluster, confluent_admin(props), timeout_s=timeout_s)

    def membership(self, group: str) -> GroupMembership:
        """The group's state and member count on this cluster (one describe, retried within the timeout)."""
        return describe_group(self._admin, group, cluster=self.cluster, timeout_s=self._timeout_s)

    def list_groups(self) -> GroupListing:
        """All consumer groups and their states, in one request per broker."""
        try:
            result = self._admin.list_consumer_groups(request_timeout=self._timeout_s).result(
                timeout=self._timeout_s + 5
            )
        except KafkaException as exc:
            raise cluster_error(exc, cluster=self.cluster, operation="list consumer groups") from exc
        states = {
            listing.group_id: (listing.state.name if listing.state is not None else "UNKNOWN")
            for listing in result.valid
        }
        return GroupListing(states, complete=not result.errors)

    def committed_offsets(
        self, groups: Iterable[str]
    ) -> tuple[dict[str, GroupOffsets], dict[str, KafkaOperationError]]:
        """Committed offsets of each group (partitions without a valid offset left out) and per-group errors.

        Metadata read here is exact only when a librdkafka client wrote it: librdkafka copies an admin result's
        metadata without a terminating NUL and confluent-kafka reads it as a C string, so metadata written by
        other clients (Java consumers) may come back with stray bytes. `GroupOffsetsClient` reads it exactly; this
        is the fallback for brokers that cannot batch OffsetFetch."""
        offsets: dict[str, GroupOffsets] = {}
        errors: dict[str, KafkaOperationError] = {}
        pending = list(dict.fromkeys(groups))
        for start in range(0, len(pending), WINDOW):
            futures: dict[str, Future[Any]] = {}
            for group in pending[start : start + WINDOW]:
                request = [ConsumerGroupTopicPartitions(group)]
                futures.update(self._admin.list_consumer_group_offsets(request, request_timeout=self._timeout_s))
            for group, future in futures.items():
                try:
                    answer = future.result(timeout=self._timeout_s + 5)
                except KafkaException as exc:
                    errors[group] = self._error(exc, "list consumer group offsets", group)
                    continue
                offsets[group] = {
                    (tp.topic, tp.partition): CommittedOffset(tp.offset, tp.metadata or "")
                    for tp in answer.topic_partitions or []
                    if tp.error is None and tp.offset >= 0
                }
        return offsets, errors

    def alter_offsets(
        self, changes: Mapping[str, Mapping[tuple[str, int], CommittedOffset]]
    ) -> dict[str, KafkaOperationError]:
        """Commit the given offsets for each group; per-group errors (GroupBusyError: the group has members).

        librdkafka writes a non-empty metadata string with a trailing NUL byte (GroupOffsetsClient does not).
        """
        errors: dict[str, KafkaOperationError] = {}
        futures: dict[str, Future[Any]] = {}
        for group, offsets in changes.items():
            if not offsets:
                continue
            partitions = [
                _partition(topic, partition, committed) for (topic, partition), committed in sorted(offsets.items())
            ]
            request = [ConsumerGroupTopicPartitions(group, partitions)]
            futures.update(self._admin.alter_consumer_group_offsets(request, request_timeout=self._timeout_s))
        for group, future in futures.items():
            try:
                answer = future.result(timeout=self._timeout_s + 5)
            except KafkaException as exc:
                errors[group] = self._error(exc, "alter consumer group offsets", group)
                continue
            failed = next((tp for tp in answer.topic_partitions or [] if tp.error is not None), None)
            if failed is not None:
                errors[group] = self._error(KafkaException(failed.error), "alter consumer group offsets", group)
        return errors

    def _error(self, exc: KafkaException, operation: str, group: str) -> KafkaOperationError:
        translated = cluster_error(exc, cluster=self.cluster, operation=operation, resource=group)
        if kafka_error_code(exc) in _GROUP_BUSY_CODES:
            return GroupBusyError(translated.message, operation=operation, retriable=True)
        return translated


def _partition(topic: str, partition: int, committed: CommittedOffset) -> TopicPartition:
    """librdkafka stores a given metadata string with a trailing NUL byte; no metadata stays empty."""
    if committed.metadata:
        return TopicPartition(topic, partition, committed.offset, committed.metadata)
    return TopicPartition(topic, partition, committed.offset)
