"""Who is writing to a partition now: DescribeProducers (KIP-664), asked of each partition's leader.

A leader keeps the state of every idempotent or transactional producer that wrote to the partition (until
`producer.id.expiration.ms`, a day by default), with the time of its last write. A planned failover refuses while
one wrote lately: what it writes after the copy drained would stay behind on the old primary. Producers that are not
idempotent leave no state (Kafka's clients are idempotent by default since 3.0). Neither librdkafka nor aiokafka has
this request; it is sent through aiokafka's protocol client.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from aiokafka.errors import KafkaError as AioKafkaError
from aiokafka.protocol.api import Request, RequestStruct, Response
from aiokafka.protocol.types import CompactArray, CompactString, Int16, Int32, Int64, Schema, TaggedFields
from aiokafka.structs import TopicPartition

from shared.errors import KafkaOperationError
from shared.kafka.error_classes import ErrorClass, error_class, error_name
from shared.kafka.factories import aio_client
from shared.partition_key import PartitionKey
from shared.retry import Backoff, retriable_strait_error, retry_blocking

DESCRIBE_TIMEOUT_S = 30
RETRY = Backoff(first_s=0.25, max_s=2.0)  # a leader moving, a partition just made


class DescribeProducersResponse_v0(Response):  # type: ignore[misc]  # (Kafka's names, as aiokafka spells them)
    API_KEY = 61
    API_VERSION = 0
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        (
            "topics",
            CompactArray(
                ("name", CompactString("utf-8")),
                (
                    "partitions",
                    CompactArray(
                        ("partition_index", Int32),
                        ("error_code", Int16),
                        ("error_message", CompactString("utf-8")),
                        (
                            "active_producers",
                            CompactArray(
                                ("producer_id", Int64),
                                ("producer_epoch", Int32),
                                ("last_sequence", Int32),
                                ("last_timestamp", Int64),
                                ("coordinator_epoch", Int32),
                                ("current_txn_start_offset", Int64),
                                ("tags", TaggedFields),
                            ),
                        ),
                        ("tags", TaggedFields),
                    ),
                ),
                ("tags", TaggedFields),
            ),
        ),
        ("tags", TaggedFields),
    )


class DescribeProducersRequest_v0(RequestStruct):  # type: ignore[misc]
    FLEXIBLE_VERSION = True
    API_KEY = 61
    API_VERSION = 0
    RESPONSE_TYPE = DescribeProducersResponse_v0
    SCHEMA = Schema(
        (
            "topics",
            CompactArray(
                ("name", CompactString("utf-8")),
                ("partition_indexes", CompactArray(Int32)),
                ("tags", TaggedFields),
            ),
        ),
        ("tags", TaggedFields),
    )


class DescribeProducersRequest(Request[DescribeProducersRequest_v0]):  # type: ignore[misc]
    """The active producers of the given partitions (all led by the broker it is sent to)."""

    API_KEY = 61

    def __init__(self, partitions: Sequence[PartitionKey]) -> None:
        self._partitions = partitions

    def build(self, request_struct_class: type[DescribeProducersRequest_v0]) -> DescribeProducersRequest_v0:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in self._partitions:
            by_topic.setdefault(topic, []).append(partition)
        return request_struct_class([(topic, parts, {}) for topic, parts in by_topic.items()], {})


@dataclass(frozen=True, slots=True)
class ActiveProducer:
    """One producer's state on a partition, as its leader keeps it."""

    producer_id: int
    producer_epoch: int
    last_timestamp_ms: int  # -1 when the broker has none
    open_transaction_from: int  # the first offset of its open transaction, -1 when none is open


async def describe_producers_async(
    props: Mapping[str, str], partitions: Sequence[PartitionKey], *, cluster: str
) -> dict[PartitionKey, list[ActiveProducer]]:
    """partition -> its active producers, one request per leader; KafkaOperationError naming what did not answer."""
    client = aio_client(props)
    try:
        await client.bootstrap()
        await client.set_topics(sorted({topic for topic, _ in partitions}))
        by_leader: dict[int, list[PartitionKey]] = {}
        for key in partitions:
            leader = client.cluster.leader_for_partition(TopicPartition(*key))
            if leader is None or leader < 0:
                raise KafkaOperationError(
                    f"{cluster}: {key[0]}-{key[1]} has no leader: its producers cannot be listed",
                    operation="describe producers",
                )
            by_leader.setdefault(int(leader), []).append(key)
        found: dict[PartitionKey, list[ActiveProducer]] = {}
        for leader, keys in by_leader.items():
            response = await client.send(leader, DescribeProducersRequest(keys))
            for topic, parts, _ in response.topics:
                for index, error, message, producers, _tags in parts:
                    if error:
                        raise KafkaOperationError(
                            f"{cluster}: DescribeProducers of {topic}-{index} failed: "
                            f"{error_name(error)}{f' ({message})' if message else ''}",
                            operation="describe producers",
                            retriable=error_class(error) is ErrorClass.RETRY,
                        )
                    found[(topic, index)] = [
                        ActiveProducer(int(p[0]), int(p[1]), int(p[3]), int(p[5])) for p in producers
                    ]
        return found
    except (AioKafkaError, OSError, TimeoutError) as exc:
        raise KafkaOperationError(
            f"{cluster}: listing active producers failed: {exc!r}", operation="describe producers"
        ) from exc
    finally:
        await client.close()


def describe_producers(
    props: Mapping[str, str], partitions: Sequence[PartitionKey], *, cluster: str
) -> dict[PartitionKey, list[ActiveProducer]]:
    """`describe_producers_async` for blocking callers, asked again while a leader is moving, bounded in time."""
    if not partitions:
        return {}
    return retry_blocking(
        lambda: asyncio.run(
            asyncio.wait_for(describe_producers_async(props, partitions, cluster=cluster), DESCRIBE_TIMEOUT_S)
        ),
        backoff=RETRY,
        within_s=DESCRIBE_TIMEOUT_S,
        retry_on=retriable_strait_error,
    )
