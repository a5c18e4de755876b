"""Which transactional ids a cluster knows (ListTransactions, KIP-664), for fencing every one a flow ever used.

Each broker answers for the transactions it coordinates, so every broker is asked. The coordinator keeps an id
until `transactional.id.expiration.ms` (7 days by default) after its last use, so this finds every slot an earlier
run of a flow may have left a transaction open in, however many slots it had. Neither librdkafka nor aiokafka has
this request; it is sent through aiokafka's protocol client.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from aiokafka.errors import IncompatibleBrokerVersion, UnsupportedVersionError
from aiokafka.errors import KafkaError as AioKafkaError
from aiokafka.protocol.api import Request, RequestStruct, Response
from aiokafka.protocol.types import CompactArray, CompactString, Int16, Int32, Int64, Schema, TaggedFields

from shared.errors import KafkaOperationError
from shared.kafka.factories import aio_client

LIST_TIMEOUT_S = 30
UNSUPPORTED_VERSION = 35  # the broker does not know ListTransactions (Kafka < 3.0)
# Worth another try: the coordinator is loading its log after a restart, or moving
COORDINATOR_BUSY = frozenset({14, 15, 16})  # COORDINATOR_LOAD_IN_PROGRESS, _NOT_AVAILABLE, NOT_COORDINATOR


class TransactionsNotListable(KafkaOperationError):
    """The broker does not support ListTransactions: the caller may only guess which ids to fence."""

    def __init__(self, message: str) -> None:
        super().__init__(message, operation="list transactions", retriable=False)


class ListTransactionsResponse_v0(Response):  # type: ignore[misc]  # (Kafka's names, as aiokafka spells them)
    API_KEY = 66
    API_VERSION = 0
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        ("error_code", Int16),
        ("unknown_state_filters", CompactArray(CompactString("utf-8"))),
        (
            "transaction_states",
            CompactArray(
                ("transactional_id", CompactString("utf-8")),
                ("producer_id", Int64),
                ("transaction_state", CompactString("utf-8")),
                ("tags", TaggedFields),
            ),
        ),
        ("tags", TaggedFields),
    )


class ListTransactionsRequest_v0(RequestStruct):  # type: ignore[misc]
    FLEXIBLE_VERSION = True
    API_KEY = 66
    API_VERSION = 0
    RESPONSE_TYPE = ListTransactionsResponse_v0
    SCHEMA = Schema(
        ("state_filters", CompactArray(CompactString("utf-8"))),
        ("producer_id_filters", CompactArray(Int64)),
        ("tags", TaggedFields),
    )


class ListTransactionsRequest(Request[ListTransactionsRequest_v0]):  # type: ignore[misc]
    """Every transaction the broker coordinates, in any state (no filters)."""

    API_KEY = 66

    def build(self, request_struct_class: type[ListTransactionsRequest_v0]) -> ListTransactionsRequest_v0:
        return request_struct_class([], [], {})


async def list_transactional_ids(props: Mapping[str, str], *, cluster: str) -> set[str]:
    """Every transactional id the cluster's coordinators hold; raises KafkaOperationError when a broker cannot say."""
    client = aio_client(props)
    try:
        await client.bootstrap()
        found: set[str] = set()
        for broker in client.cluster.brokers():
            response = await client.send(broker.nodeId, ListTransactionsRequest())
            code = response.error_code
            if code == UNSUPPORTED_VERSION:
                raise TransactionsNotListable(f"{cluster}: broker {broker.nodeId} does not support ListTransactions")
            if code:
                raise KafkaOperationError(
                    f"{cluster}: broker {broker.nodeId} answered ListTransactions with error {code}",
                    operation="list transactions",
                    retriable=code in COORDINATOR_BUSY,
                )
            found.update(state[0] for state in response.transaction_states)
        return found
    except (IncompatibleBrokerVersion, UnsupportedVersionError) as exc:
        raise TransactionsNotListable(f"{cluster}: the broker does not support ListTransactions: {exc!r}") from exc
    except (AioKafkaError, OSError, TimeoutError) as exc:
        raise KafkaOperationError(
            f"{cluster}: listing transactions failed: {exc!r}", operation="list transactions"
        ) from exc
    finally:
        await client.close()


def transactional_ids(props: Mapping[str, str], *, cluster: str) -> set[str]:
    """`list_transactional_ids` for blocking callers (the data-mirror driver's threads), bounded in time."""
    return asyncio.run(asyncio.wait_for(list_transactional_ids(props, cluster=cluster), LIST_TIMEOUT_S))
