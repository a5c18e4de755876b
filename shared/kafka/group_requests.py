"""Consumer-group offsets in bulk over aiokafka: many groups per OffsetFetch, exact metadata on OffsetCommit.

librdkafka (and aiokafka's admin) ask one group per offsets request, and librdkafka writes committed
metadata with a trailing NUL byte. Here, as in Kafka's Java admin client, the coordinators of all groups
are found in one FindCoordinator v4 request, then each coordinator gets up to `groups_per_request`
groups per OffsetFetch v8, all in flight together; commits are one OffsetCommit per group, all in flight
together, with the metadata string as given. Brokers older than Kafka 3.0 lack the batched versions:
`UnsupportedBatching` tells the caller to read offsets one group per request instead.
Talks to nodes through aiokafka's admin client (its private `_send_request*` methods).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import IncompatibleBrokerVersion, KafkaError, for_code
from aiokafka.protocol.api import Request
from aiokafka.protocol.commit import OffsetCommitRequest

from shared.errors import KafkaOperationError
from shared.kafka import error_codes as codes
from shared.kafka.cluster_errors import cluster_error
from shared.kafka.factories import aio_admin
from shared.kafka.group_offsets import CommittedOffset, GroupBusyError, GroupOffsets
from shared.kafka.group_protocol import FetchGroupOffsets, FindGroupCoordinators
from shared.retry import Backoff, retry_rounds

# Answers that mean "ask the coordinator again".
_STALE_COORDINATOR = frozenset(
    {codes.COORDINATOR_LOAD_IN_PROGRESS, codes.COORDINATOR_NOT_AVAILABLE, codes.NOT_COORDINATOR}
)
# Answers to a commit from outside the group while it has members (classic and KIP-848 groups).
_GROUP_BUSY = frozenset(
    {
        codes.ILLEGAL_GENERATION,
        codes.UNKNOWN_MEMBER_ID,
        codes.REBALANCE_IN_PROGRESS,
        codes.NON_EMPTY_GROUP,
        codes.FENCED_MEMBER_EPOCH,
        codes.STALE_MEMBER_EPOCH,
    }
)
_ATTEMPTS = 3
_COORDINATOR_MOVED = Backoff(0.5)  # the wait before asking a moved group coordinator again


class UnsupportedBatching(Exception):
    """The cluster does not speak FindCoordinator v4 / OffsetFetch v8."""


class GroupOffsetsClient:
    """Read and commit offsets of many groups on the cluster called `cluster`; call `close()` when done."""

    def __init__(
        self, cluster: str, props: Mapping[str, str], *, timeout_s: float, groups_per_request: int = 1000
    ) -> None:
        self.cluster = cluster
        self._props = dict(props)
        self._timeout_s = timeout_s
        self._groups_per_request = groups_per_request
        self._admin: AIOKafkaAdminClient | None = None
        self._coordinators: dict[str, int] = {}

    async def close(self) -> None:
        """Disconnect; safe to call twice."""
        if self._admin is not None:
            admin, self._admin = self._admin, None
            await admin.close()

    async def committed_offsets(
        self, groups: Iterable[str]
    ) -> tuple[dict[str, GroupOffsets], dict[str, KafkaOperationError]]:
        """Offsets of every group (partitions without a valid offset left out) and per-group errors.

        Raises UnsupportedBatching when the brokers are too old for batched requests.
        """
        offsets: dict[str, GroupOffsets] = {}
        errors: dict[str, KafkaOperationError] = {}

        async def fetch_round(pending: list[str], retry: bool) -> list[str]:
            return await self._fetch_round(pending, offsets, errors, retry=retry)

        await retry_rounds(fetch_round, list(dict.fromkeys(groups)), attempts=_ATTEMPTS, backoff=_COORDINATOR_MOVED)
        return offsets, errors

    async def commit_offsets(
        self, changes: Mapping[str, Mapping[tuple[str, int], CommittedOffset]]
    ) -> dict[str, KafkaOperationError]:
        """Commit offsets for each group from outside it; per-group errors (GroupBusyError: it has members)."""
        errors: dict[str, KafkaOperationError] = {}

        async def commit_round(pending: list[str], retry: bool) -> list[str]:
            await self._find_coordinators([g for g in pending if g not in self._coordinators], errors)
            ready = [g for g in pending if g in self._coordinators]
            answers = await asyncio.gather(*(self._commit(group, changes[group]) for group in ready))
            again = []
            for group, code in zip(ready, answers, strict=True):
                if isinstance(code, KafkaOperationError):
                    errors[group] = code
                elif code in _STALE_COORDINATOR and retry:
                    self._coordinators.pop(group, None)
                    again.append(group)
                elif code in _GROUP_BUSY:
                    message = f"cluster {self.cluster}: group {group} has active members (error code {code})"
                    errors[group] = GroupBusyError(message, operation="commit group offsets")
                elif code:
                    errors[group] = self._error(code, "commit group offsets", group)
            return again

        pending = [group for group, offsets in changes.items() if offsets]
        await retry_rounds(commit_round, pending, attempts=_ATTEMPTS, backoff=_COORDINATOR_MOVED)
        return errors

    async def _commit(
        self, group: str, offsets: Mapping[tuple[str, int], CommittedOffset]
    ) -> int | KafkaOperationError:
        """The first error code of the answer (0: all committed), or the request's failure."""
        topics: dict[str, list[tuple[int, int, str]]] = {}
        for (topic, partition), committed in sorted(offsets.items()):
            topics.setdefault(topic, []).append((partition, committed.offset, committed.metadata))
        request = OffsetCommitRequest(
            group,
            OffsetCommitRequest.DEFAULT_GENERATION_ID,
            "",
            OffsetCommitRequest.DEFAULT_RETENTION_TIME,
            list(topics.items()),
        )
        answer = await self._send(self._coordinators[group], request, "commit group offsets")
        if isinstance(answer, KafkaOperationError):
            return answer
        codes = [code for _topic, partitions in answer.topics for _partition, code in partitions if code]
        return codes[0] if codes else 0

    async def _fetch_round(
        self,
        groups: list[str],
        offsets: dict[str, GroupOffsets],
        errors: dict[str, KafkaOperationError],
        *,
        retry: bool,
    ) -> list[str]:
        """Fetch `groups`; return those to ask again (their coordinator moved), when `retry`."""
        await self._find_coordinators([g for g in groups if g not in self._coordinators], errors)
        by_node: dict[int, list[str]] = {}
        for group in groups:
            if group in self._coordinators:
                by_node.setdefault(self._coordinators[group], []).append(group)
        batches = [
            (node, members[start : start + self._groups_per_request])
            for node, members in by_node.items()
            for start in range(0, len(members), self._groups_per_request)
        ]
        operation = "list consumer group offsets"
        answers = await asyncio.gather(*(self._send(node, FetchGroupOffsets(b), operation) for node, b in batches))
        again: list[str] = []
        for (_, batch), answer in zip(batches, answers, strict=True):
            if isinstance(answer, KafkaOperationError):
                errors.update(dict.fromkeys(batch, answer))
                continue
            for group_id, topics, error_code, _ in answer.groups:
                if error_code in _STALE_COORDINATOR and retry:
                    self._coordinators.pop(group_id, None)
                    again.append(group_id)
                elif error_code:
                    errors[group_id] = self._error(error_code, operation, group_id)
                else:
                    errors.pop(group_id, None)
                    offsets[group_id] = _offsets(topics)
        return again

    async def _find_coordinators(self, groups: list[str], errors: dict[str, KafkaOperationError]) -> None:
        step = self._groups_per_request * 10
        for start in range(0, len(groups), step):
            keys = groups[start : start + step]
            answer = await self._send(None, FindGroupCoordinators(keys), "find group coordinator")
            if isinstance(answer, KafkaOperationError):
                errors.update(dict.fromkeys(keys, answer))
                continue
            for key, node_id, _host, _port, error_code, _message, _ in answer.coordinators:
                if error_code:
                    errors[key] = self._error(error_code, "find group coordinator", key)
                else:
                    self._coordinators[key] = node_id

    async def _send(self, node_id: int | None, request: Request[Any], operation: str) -> Any:
        """The response, or a KafkaOperationError for a failed request; UnsupportedBatching propagates."""
        try:
            admin = await self._connect()
            if node_id is None:
                return await admin._send_request(request)
            return await admin._send_request_to_node(node_id, request)
        except (IncompatibleBrokerVersion, NotImplementedError) as exc:
            raise UnsupportedBatching(str(exc)) from exc
        except (KafkaError, TimeoutError, OSError) as exc:
            return cluster_error(exc, cluster=self.cluster, operation=operation)

    async def _connect(self) -> AIOKafkaAdminClient:
        if self._admin is None:
            admin = aio_admin(self._props, request_timeout_ms=int(self._timeout_s * 1000))
            await admin.start()
            self._admin = admin
        return self._admin

    def _error(self, code: int, operation: str, group: str) -> KafkaOperationError:
        exc = for_code(code)(f"error code {code}")
        return cluster_error(exc, cluster=self.cluster, operation=operation, resource=group)


def _offsets(topics: list[Any]) -> GroupOffsets:
    return {
        (name, partition): CommittedOffset(offset, metadata or "")
        for name, partitions, _ in topics
        for partition, offset, _epoch, metadata, error_code, _ in partitions
        if not error_code and offset >= 0
    }
