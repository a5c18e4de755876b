"""A copy task's two protocol clients for batch forwarding: the source fetcher and the target producer, built
from the source consumer's and the target producer's settings (their Java names, as the user configured them)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from shared.kafka.batch_fetcher import (
    DEFAULT_FETCH_LONG_POLL_MS,
    DEFAULT_FETCH_MAX_BYTES,
    FETCH_MAX_WAIT_MS,
    BatchFetcher,
)
from shared.kafka.batch_producer import (
    DEFAULT_BUFFER_BYTES,
    DEFAULT_MAX_IN_FLIGHT_REQUESTS,
    DEFAULT_MAX_REQUEST_BYTES,
    INIT_TIMEOUT_S,
    BatchProducer,
)
from shared.kafka.client_names import client_id
from shared.kafka.factories import aio_client
from shared.kafka.transaction_coordinator import TransactionCoordinator
from shared.retry import Backoff

DEFAULT_REQUEST_TIMEOUT_MS = 30_000
DEFAULT_DELIVERY_TIMEOUT_MS = 120_000
DEFAULT_TRANSACTION_TIMEOUT_MS = 60_000  # Kafka's producer default `transaction.timeout.ms`


@dataclass
class BatchLink:
    """A copy task's two protocol clients for batch forwarding: the source fetcher and the target producer."""

    fetcher: BatchFetcher
    producer: BatchProducer
    read_committed: bool

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.producer.close()
        with contextlib.suppress(Exception):
            await self.fetcher.close()


async def open_batch_link(
    source_props: Mapping[str, str],
    target_props: Mapping[str, str],
    source_topics: Sequence[str],
    target_topics: Sequence[str],
    *,
    purpose: str | None = None,
    transactional_id: str | None = None,
) -> BatchLink:
    """Connected clients, with the fetch sizes of the source consumer's settings and the target producer's
    timeouts (their Java names, as the user configured them); their client ids say `purpose` (`client_names`).
    With `transactional_id` the producer is transactional (exactly-once): connecting fences its earlier producers."""
    fetching, producing = client_id("client", purpose, "fetch"), client_id("client", purpose, "produce")

    def number(props: Mapping[str, str], key: str, default: int) -> int:
        return int(props.get(key, default))

    read_committed = source_props.get("isolation.level", "read_committed") != "read_uncommitted"
    partition_bytes = source_props.get("max.partition.fetch.bytes")
    fetcher = BatchFetcher(
        aio_client(source_props, client_id=fetching),
        max_wait_ms=min(number(source_props, "fetch.max.wait.ms", FETCH_MAX_WAIT_MS), FETCH_MAX_WAIT_MS),
        long_poll_ms=number(source_props, "fetch.max.wait.ms", DEFAULT_FETCH_LONG_POLL_MS),
        max_bytes=number(source_props, "fetch.max.bytes", DEFAULT_FETCH_MAX_BYTES),
        partition_max_bytes=int(partition_bytes) if partition_bytes is not None else None,
        read_committed=read_committed,
        lane_client=lambda: aio_client(source_props, client_id=fetching),
    )
    request_timeout_ms = number(target_props, "request.timeout.ms", DEFAULT_REQUEST_TIMEOUT_MS)
    target_client = aio_client(target_props, client_id=producing)
    transactions = None
    if transactional_id is not None:
        transactions = TransactionCoordinator(
            target_client,
            transactional_id,
            transaction_timeout_ms=number(target_props, "transaction.timeout.ms", DEFAULT_TRANSACTION_TIMEOUT_MS),
            timeout_s=INIT_TIMEOUT_S,
        )
    producer = BatchProducer(
        target_client,
        request_timeout_ms=request_timeout_ms,
        delivery_timeout_s=number(target_props, "delivery.timeout.ms", DEFAULT_DELIVERY_TIMEOUT_MS) / 1000,
        max_request_bytes=number(target_props, "max.request.size", DEFAULT_MAX_REQUEST_BYTES),
        buffer_bytes=number(target_props, "buffer.memory", DEFAULT_BUFFER_BYTES),
        max_in_flight_requests=number(
            target_props, "max.in.flight.requests.per.connection", DEFAULT_MAX_IN_FLIGHT_REQUESTS
        ),
        retry_backoff=Backoff(
            first_s=number(target_props, "retry.backoff.ms", 100) / 1000,
            max_s=number(target_props, "retry.backoff.max.ms", 1000) / 1000,
        ),
        transactions=transactions,
    )
    link = BatchLink(fetcher, producer, read_committed)
    try:  # both clusters at once: a task's start-up waits for the slower one only
        await asyncio.gather(fetcher.start(source_topics), producer.start(target_topics))
    except BaseException:
        await link.close()
        raise
    return link
