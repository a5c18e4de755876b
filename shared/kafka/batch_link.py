"""Raw record batches over the Kafka protocol: fetched from source partitions, produced to target partitions.

aiokafka's protocol client does the connections, metadata, version negotiation, TLS and SASL; this module
only builds Fetch, Produce and InitProducerId requests and keeps the idempotent producer's bookkeeping. The
record bytes are never decoded here (`record_batches` does that).

Idempotence, as Kafka's own producer keeps it: the producer id comes from InitProducerId, every partition has
a running sequence, at most five batches per partition are in flight (the broker remembers the last five, so a
retried batch that had landed is answered with its first offset instead of being written twice), and until a
partition's first batch is acknowledged only that batch is in flight. A retriable failure sends everything
unacknowledged again with the same sequences, after a backoff that grows while the failures go on; a refusal (too
large, invalid, not allowed) is the caller's to handle: the batches sent after it are dropped (the broker refuses
them as out of sequence) and reported so.
Every outcome is an `Outcome` value, kept apart from the broker's error codes (UNKNOWN_SERVER_ERROR is -1).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from aiokafka.client import AIOKafkaClient
from aiokafka.errors import KafkaError as AioKafkaError
from aiokafka.errors import for_code
from aiokafka.protocol.admin import ApiVersionRequest
from aiokafka.protocol.offset import OffsetRequest
from aiokafka.protocol.transaction import InitProducerIdRequest
from aiokafka.structs import TopicPartition

from shared.errors import KafkaOperationError
from shared.kafka.client_names import client_id
from shared.kafka.error_codes import (
    CLUSTER_AUTHORIZATION_FAILED,
    DUPLICATE_SEQUENCE_NUMBER,
    INVALID_PRODUCER_EPOCH,
    NOT_LEADER_OR_FOLLOWER,
    OUT_OF_ORDER_SEQUENCE_NUMBER,
    PRODUCER_FENCED,
    UNKNOWN_PRODUCER_ID,
    UNKNOWN_SERVER_ERROR,
    UNKNOWN_TOPIC_OR_PARTITION,
)
from shared.kafka.factories import aio_client
from shared.kafka.fetch_session import FetchSession
from shared.kafka.leader_epochs import (
    NO_EPOCH,
    EpochEndsRequest,
    EpochFetchRequest,
    LeaderEpochsRequest,
    epoch_end_answers,
)
from shared.kafka.leader_epochs import leader_epochs as epochs_of
from shared.kafka.produce_request import BatchProduceRequest
from shared.kafka.record_batches import TargetBatch
from shared.retry import Backoff, retry_async

PartitionKey = tuple[str, int]
READ_UNCOMMITTED, READ_COMMITTED = 0, 1
ACKS_ALL = -1
MAX_IN_FLIGHT_PER_PARTITION = 5
# A partition's retriable failures in a row wait retry.backoff.ms, doubling up to retry.backoff.max.ms, +-20% (as
# Kafka's producer, KIP-580): thousands of partitions a target has not created yet are not sent again every 100 ms.
DEFAULT_RETRY_BACKOFF = Backoff(first_s=0.1, max_s=1.0)
RETRY_JITTER = 0.2
INIT_BACKOFF = Backoff(first_s=0.1, max_s=1.0)
INIT_TIMEOUT_S = 60

# Codes that are about the producer or the request, not the records: the copy cannot go on with this producer.
_PRODUCER_BROKEN = frozenset(
    {
        DUPLICATE_SEQUENCE_NUMBER,
        INVALID_PRODUCER_EPOCH,
        UNKNOWN_PRODUCER_ID,
        PRODUCER_FENCED,
        CLUSTER_AUTHORIZATION_FAILED,
    }
)
LATEST_OFFSET = -1  # ListOffsets' timestamp for the log end
CONSUMER_REPLICA_ID = -1
_NOT_ABOUT_THE_RECORDS = frozenset({OUT_OF_ORDER_SEQUENCE_NUMBER, UNKNOWN_TOPIC_OR_PARTITION})
SEQUENCE_WRAP = 2**31  # sequences are int32 and wrap to 0, as Kafka's producer wraps them
DEFAULT_MAX_REQUEST_BYTES = 1_048_576  # Kafka's producer default `max.request.size`
DEFAULT_BUFFER_BYTES = 33_554_432  # Kafka's producer default `buffer.memory`
DEFAULT_MAX_IN_FLIGHT_REQUESTS = 5  # Kafka's producer default `max.in.flight.requests.per.connection`
REQUEST_OVERHEAD_BYTES = 512  # a Produce request's header and per-topic, per-partition framing, generously


def split_requests(
    batches: Mapping[PartitionKey, OutgoingBatch], max_request_bytes: int
) -> list[dict[PartitionKey, OutgoingBatch]]:
    """The batches for one leader as Produce requests of at most `max_request_bytes` each (a batch larger than
    that alone goes in a request of its own): a request bigger than the broker's `socket.request.max.bytes` makes
    it close the connection, and the same request would be built again after every reconnect."""
    requests: list[dict[PartitionKey, OutgoingBatch]] = []
    current: dict[PartitionKey, OutgoingBatch] = {}
    size = REQUEST_OVERHEAD_BYTES
    for key, batch in batches.items():
        added = len(batch.payload) + REQUEST_OVERHEAD_BYTES // 4 + len(key[0])
        if current and size + added > max_request_bytes:
            requests.append(current)
            current, size = {}, REQUEST_OVERHEAD_BYTES
        current[key] = batch
        size += added
    if current:
        requests.append(current)
    return requests


def error_name(code: int) -> str:
    """The Kafka name of an error code (MESSAGE_TOO_LARGE, UNKNOWN_SERVER_ERROR, ...)."""
    if code == UNKNOWN_SERVER_ERROR:
        return "UNKNOWN_SERVER_ERROR"  # aiokafka names it UNKNOWN
    cls = for_code(code)
    return str(getattr(cls, "message", cls.__name__)).upper()


def is_retriable(code: int) -> bool:
    return code != UNKNOWN_TOPIC_OR_PARTITION and bool(getattr(for_code(code), "retriable", False))


# -- source --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PartitionFetch:
    """One partition's part of a fetch response; `records` holds whole and maybe one truncated batch."""

    requested: int
    error: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    aborted: list[tuple[int, int]]
    records: bytes | memoryview  # a view of the Fetch response (`fetch_response`)


class BatchFetcher:
    """Fetches raw batches from source partition leaders, read_committed, with the consumer's size limits, and
    with each partition's current leader epoch (KIP-320: a stale leader refuses instead of serving). Each leader
    is fetched in incremental fetch sessions (KIP-227), so a fetch costs what changed, not every partition.

    A distant leader is fetched in more than one session at a time (`lanes`, each over its own share of the
    partitions) with larger per-partition fetches when the consumer sets none (`partition_bytes`): one fetch of at
    most max.partition.fetch.bytes per partition per round trip caps a partition at 1 MiB / 150 ms = 7 MiB/s,
    whatever the link. Each lane past the first has a connection of its own (`lane_client`): a broker handles one
    request of a connection at a time, so two lanes on one connection wait for each other's long polls. The round
    trip is measured with ApiVersions (a request the broker answers at once) at start-up, and for a leader met later
    when it is first fetched."""

    def __init__(
        self,
        client: AIOKafkaClient,
        *,
        max_wait_ms: int,
        max_bytes: int,
        partition_max_bytes: int | None,
        read_committed: bool = True,
        lane_client: Callable[[], AIOKafkaClient] | None = None,
        long_poll_ms: int | None = None,
    ) -> None:
        self._client = client
        self._new_lane_client = lane_client  # None: every lane shares `client`'s connections
        self._lane_clients: dict[int, asyncio.Task[AIOKafkaClient]] = {}
        self._isolation = READ_COMMITTED if read_committed else READ_UNCOMMITTED
        self._max_wait_ms = max_wait_ms
        self._long_poll_ms = max_wait_ms if long_poll_ms is None else max(max_wait_ms, long_poll_ms)
        self._max_bytes = max_bytes
        self._partition_max_bytes = partition_max_bytes  # None: sized from the round trip (`partition_bytes`)
        self._topics: list[str] = []
        self.epochs: dict[PartitionKey, int] = {}  # current leader epochs, as the metadata last said
        self._sessions: dict[tuple[int, int], FetchSession] = {}  # per source leader and lane
        self.round_trips: dict[int, float] = {}  # per source leader: the shortest ApiVersions round trip seen
        self._measuring: dict[int, asyncio.Task[None]] = {}
        # Counts the times leaders, leader epochs or round trips (lanes) may have changed: a caller that keeps
        # where each partition is fetched looks at every partition again when it moved on.
        self.changes = 0

    async def start(self, topics: Sequence[str]) -> None:
        """Connect, read the metadata and leader epochs, and measure the round trip to every source broker (so
        the first fetches of a distant one already go in lanes: a few round trips, while the target connects)."""
        self._topics = list(topics)
        await self._client.bootstrap()
        self._client.cluster.add_listener(self._metadata_updated)  # aiokafka refreshes it by itself too
        await self._client.set_topics(self._topics)
        await self._refresh_epochs()
        brokers = [int(broker.nodeId) for broker in self._client.cluster.brokers()]
        self._measuring.update({node: asyncio.ensure_future(self._measure(node)) for node in brokers})
        await asyncio.gather(*self._measuring.values())

    async def close(self) -> None:
        for measuring in self._measuring.values():
            measuring.cancel()
        for lane in list(self._lane_clients):
            closing = self._drop_lane_client(lane)
            if closing is not None:
                await closing
        await self._client.close()

    def _metadata_updated(self, _cluster: object) -> None:
        self.changes += 1  # leaders may have moved

    def _drop_lane_client(self, lane: int) -> asyncio.Future[None] | None:
        """Forget `lane`'s own client; the closing of its connections, if it had any."""
        made = self._lane_clients.pop(lane, None)
        if made is None:
            return None
        if not made.done():
            made.cancel()
            return None
        if made.cancelled() or made.exception() is not None:
            return None
        closing: asyncio.Future[None] = asyncio.ensure_future(made.result().close())
        return closing

    async def _client_of(self, lane: int) -> AIOKafkaClient:
        """The client whose connections carry `lane`'s fetches (made and bootstrapped the first time)."""
        if lane == 0 or self._new_lane_client is None:
            return self._client
        made = self._lane_clients.get(lane)
        if made is None or (made.done() and made.exception() is not None):
            made = self._lane_clients[lane] = asyncio.ensure_future(self._bootstrap_lane_client())
        return await asyncio.shield(made)

    async def _bootstrap_lane_client(self, nodes: Sequence[int] = ()) -> AIOKafkaClient:
        """A lane's own client, bootstrapped and connected to `nodes` (each connection is a round trip or two)."""
        assert self._new_lane_client is not None
        client = self._new_lane_client()
        try:
            await client.bootstrap()
            await asyncio.gather(*(client.ready(node) for node in nodes))  # False on failure: the fetch connects
        except BaseException:
            await client.close()
            raise
        return client

    def _open_lanes(self, node: int) -> None:
        """Open `node`'s lanes past the first in the background as soon as its round trip is known: a lane's own
        client costs several round trips (bootstrap, metadata, a connection to the leader), which its first fetch
        would otherwise wait, while the first lane already copies (at 150 ms: 0.7 s of a lane's time)."""
        if self._new_lane_client is None:
            return
        for lane in range(1, self.lanes(node)):
            if lane not in self._lane_clients:
                self._lane_clients[lane] = asyncio.ensure_future(self._bootstrap_lane_client((node,)))

    def lanes(self, node: int) -> int:
        """How many fetches go to `node` at once: 1 near, one more per NEAR_ROUND_TRIP_S of round trip (at most
        MAX_FETCH_LANES); 1 until the round trip is measured (which this starts)."""
        round_trip = self.round_trips.get(node)
        if round_trip is None:
            if node not in self._measuring:
                self._measuring[node] = asyncio.ensure_future(self._measure(node))
            return 1
        return max(1, min(MAX_FETCH_LANES, 1 + int(round_trip / NEAR_ROUND_TRIP_S)))

    def partition_bytes(self, node: int) -> int:
        """The per-partition fetch size for `node`: the consumer's, or what a task copies in one round trip to it
        (PARTITION_BYTES_PER_S times the round trip), at least Kafka's default. A partition has one fetch under way
        at a time, so it crosses a long link one fetch per round trip: 4 MiB at 150 ms held a partition's backlog to
        27 MiB/s and four round trips for 16 MiB, while the task copies 180 MiB/s."""
        if self._partition_max_bytes is not None:
            return self._partition_max_bytes
        round_trip = self.round_trips.get(node, 0.0)
        return max(DEFAULT_PARTITION_FETCH_BYTES, int(round_trip * PARTITION_BYTES_PER_S))

    async def _measure(self, node: int) -> None:
        """The shortest of a few ApiVersions round trips to `node` (none on failure: asked again later)."""
        shortest: float | None = None
        try:
            for _ in range(ROUND_TRIP_PROBES):
                began = time.monotonic()
                await asyncio.wait_for(self._client.send(node, ApiVersionRequest()), 10)
                took = time.monotonic() - began
                shortest = took if shortest is None else min(shortest, took)
        except (AioKafkaError, TimeoutError, OSError):
            pass
        if shortest is not None:
            self.round_trips[node] = shortest
            self.changes += 1
            self._open_lanes(node)
        else:
            self._measuring.pop(node, None)

    def leader(self, key: PartitionKey) -> int | None:
        """The partition's leader as the metadata knows it; None while unknown."""
        node = self._client.cluster.leader_for_partition(TopicPartition(*key))
        return None if node is None or node < 0 else int(node)

    def knows(self, topic: str) -> bool:
        """True while the metadata lists `topic` (False: deleted, or never there)."""
        return self._client.cluster.partitions_for_topic(topic) is not None

    def epoch(self, key: PartitionKey) -> int:
        """The partition's current leader epoch as the metadata last said (-1 while unknown)."""
        return self.epochs.get(key, NO_EPOCH)

    async def refresh(self) -> None:
        """New metadata (a leader moved or was unknown, or an epoch was refused)."""
        with contextlib.suppress(AioKafkaError, asyncio.TimeoutError):
            await asyncio.wait_for(self._client.force_metadata_update(), timeout=10)
        await self._refresh_epochs()
        self.changes += 1

    async def _refresh_epochs(self) -> None:
        """The partitions' leader epochs (aiokafka's own metadata has none); kept as they were on a failure."""
        node = self._client.get_random_node()
        if node is None or not self._topics:
            return
        with contextlib.suppress(AioKafkaError, asyncio.TimeoutError, OSError):
            response = await asyncio.wait_for(self._client.send(node, LeaderEpochsRequest(self._topics)), 10)
            self.epochs.update(epochs_of(response))

    async def epoch_end(self, key: PartitionKey, epoch: int) -> tuple[int, int]:
        """(error code, end offset): where leader epoch `epoch` ends in the partition leader's log now."""
        node = self.leader(key)
        if node is None:
            raise KafkaOperationError(f"{key[0]}-{key[1]}: no leader known", operation="offset for leader epoch")
        try:
            response = await self._client.send(node, EpochEndsRequest({key: (self.epoch(key), epoch)}))
        except (TimeoutError, AioKafkaError, OSError) as exc:
            raise KafkaOperationError(
                f"asking node {node} for epoch {epoch}'s end failed: {exc!r}", operation="offset for leader epoch"
            ) from exc
        return epoch_end_answers(response).get(key, (UNKNOWN_TOPIC_OR_PARTITION, -1))

    async def fetch(
        self,
        node: int,
        positions: Mapping[PartitionKey, int],
        max_bytes: int | None = None,
        lane: int = 0,
        *,
        long_poll: bool = False,
    ) -> dict[PartitionKey, PartitionFetch]:
        """One Fetch from `node` for `positions` (every partition to read from it now, in session `lane`), of at
        most `max_bytes` (and the consumer's limits; the broker still returns a first batch larger than that whole,
        so a partition always moves); waits up to max_wait_ms when nothing is there yet, or long_poll_ms with
        `long_poll` (no partition waits to be fetched until this one answers). The answer holds the partitions with
        records or news (a changed high watermark or log start, an error): the others had nothing."""
        limit = self._max_bytes if max_bytes is None else max(1, min(self._max_bytes, max_bytes))
        # The same per-partition size every time: a changed one would name the partition in the session again.
        size = self.partition_bytes(node)
        wanted = {key: (offset, self.epoch(key), size) for key, offset in positions.items()}
        session = self._sessions.setdefault((node, lane), FetchSession())
        ask = session.request(wanted)
        request = EpochFetchRequest(
            self._long_poll_ms if long_poll else self._max_wait_ms,
            limit,
            self._isolation,
            ask.partitions,
            session=(ask.session_id, ask.epoch),
            forgotten=ask.forgotten,
        )
        try:
            client = await self._client_of(lane)
            response = await client.send(node, request)
        except (TimeoutError, AioKafkaError, OSError) as exc:
            session.reset()  # whether the broker saw it is unknown: the next fetch opens a new session
            self._drop_lane_client(lane)  # made again for the next fetch (this one may not know a new broker)
            raise KafkaOperationError(f"fetching from node {node} failed: {exc!r}", operation="fetch") from exc
        except BaseException:
            session.reset()  # cancelled (a hand-over): the session's state is unknown
            raise
        if not session.answered(response.error_code, response.session_id):
            return {}  # the broker lost the session: nothing fetched, the next fetch names every partition
        fetched: dict[PartitionKey, PartitionFetch] = {}
        for topic, partitions in response.topics:
            for part in partitions:
                partition, error, high, lso, log_start, aborted = part[0], part[1], part[2], part[3], part[4], part[5]
                key = (topic, partition)
                fetched[key] = PartitionFetch(
                    requested=positions.get(key, -1),
                    error=error,
                    high_watermark=high,
                    last_stable_offset=lso,
                    log_start_offset=log_start,
                    aborted=[(int(pid), int(first)) for pid, first in (aborted or [])],
                    records=part[-1] or b"",
                )
        return fetched


# -- target --------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class OutgoingBatch:
    """A batch made for the target (producer fields still unset) and the caller's note of what it holds."""

    key: PartitionKey
    payload: TargetBatch
    records: int
    note: Any
    sequence: int = -1
    queued_at: float = 0.0
    order: int = 0


class Outcome(Enum):
    """What became of a batch. Our own values, never a broker's error code (the broker's -1 is an error too)."""

    ACKNOWLEDGED = "acknowledged"  # written; `base_offset` is its first offset on the target
    REFUSED = "refused"  # the broker answered with an error about the records (`error` holds its code)
    DROPPED = "dropped"  # not written: sent or queued after a refused batch of its partition


@dataclass(frozen=True, slots=True)
class Landed:
    """What became of one batch: its first offset on the target, or why it was not written."""

    batch: OutgoingBatch
    outcome: Outcome
    base_offset: int = -1
    error: int = 0
    message: str = ""


@dataclass
class _Lane:
    """One target partition: its running sequence and its batches, queued and in flight, in order."""

    next_sequence: int = 0
    acknowledged_once: bool = False
    queued: deque[OutgoingBatch] = field(default_factory=deque)
    in_flight: deque[OutgoingBatch] = field(default_factory=deque)
    resend: bool = False  # a retriable failure: once nothing is in flight, send the unacknowledged again
    retry_at: float = 0.0
    failures: int = 0  # retriable failures in a row (the backoff grows with them; an acknowledgement resets it)
    unready: bool = False  # its leader has not taken the partition up yet: probed with ListOffsets, not sent again
    unready_since: float | None = None  # when it was last found not ready (None: ready, or never asked)
    dropping: int = 0  # in-flight batches sent after a refusal, still to be answered and dropped
    refused: bool = False  # nothing more goes out until the caller decided what to send again (`resume`)
    node: int = -1  # the leader the in-flight batches went to; a new leader waits until they are answered

    def mark_unready(self, now: float) -> None:
        self.unready = True
        if self.unready_since is None:
            self.unready_since = now

    def capacity(self, now: float) -> int:
        if self.resend or self.dropping or self.refused or self.unready or now < self.retry_at:
            return 0
        limit = MAX_IN_FLIGHT_PER_PARTITION if self.acknowledged_once else 1
        return limit - len(self.in_flight)


class BatchProducer:
    """An idempotent producer of ready-made batches (acks=all), one lane per target partition."""

    def __init__(
        self,
        client: AIOKafkaClient,
        *,
        request_timeout_ms: int,
        delivery_timeout_s: float,
        max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
        buffer_bytes: int = DEFAULT_BUFFER_BYTES,
        max_in_flight_requests: int = DEFAULT_MAX_IN_FLIGHT_REQUESTS,
        retry_backoff: Backoff = DEFAULT_RETRY_BACKOFF,
    ) -> None:
        self._client = client
        self._retry_backoff = retry_backoff
        self._max_request_bytes = max_request_bytes
        # A broker reads one request per connection at a time: more in flight only wait in socket buffers, each
        # as an encoded copy of batches already counted once (a target that stops answering would hold them all).
        self._max_in_flight_requests = max(1, max_in_flight_requests)
        self._node_requests: dict[int, int] = {}  # requests in flight per target broker
        self.buffer_bytes = buffer_bytes  # buffer.memory: sizes the caller's byte bound (BatchCopier._byte_bound)
        self.buffered_bytes = 0
        self._timeout_ms = request_timeout_ms
        self._delivery_timeout_s = delivery_timeout_s
        self._lanes: dict[PartitionKey, _Lane] = {}
        # Counts the times a partition was found ready or not ready by the producer itself (a probe's answer, a
        # new partition's leader refusing its first batch), for a caller that keeps which partitions it fetches.
        self.readiness_changes = 0
        self._landed: list[Landed] = []
        self._changed = asyncio.Event()
        self._requests: set[asyncio.Task[None]] = set()
        self._probing: set[int] = set()  # target brokers a readiness probe is out to
        self._metadata_asked = 0.0
        self._failure: BaseException | None = None
        self._sent = 0
        self.producer_id = -1
        self.producer_epoch = -1

    async def start(self, topics: Sequence[str]) -> None:
        """Connect and take a producer id of our own (never the source's: ids are per cluster).

        A cluster whose transaction coordinator is still loading (its first idempotent producer creates
        `__transaction_state`) answers with a retriable error for a while: asked again, as Kafka's producer does."""
        await self._client.bootstrap()
        await self._client.set_topics(list(topics))
        await asyncio.wait_for(retry_async(self._init_producer_id, backoff=INIT_BACKOFF), INIT_TIMEOUT_S)

    async def _init_producer_id(self) -> None:
        node = self._client.get_random_node()
        try:
            response = await self._client.send(node, InitProducerIdRequest(None, self._timeout_ms))
        except (AioKafkaError, TimeoutError, OSError) as exc:
            raise KafkaOperationError(f"InitProducerId failed: {exc!r}", operation="init producer id") from exc
        if response.error_code:
            raise KafkaOperationError(
                f"InitProducerId failed: {error_name(response.error_code)}",
                operation="init producer id",
                retriable=is_retriable(response.error_code),
            )
        self.producer_id, self.producer_epoch = response.producer_id, response.producer_epoch

    async def close(self) -> None:
        for task in list(self._requests):
            task.cancel()
        await self._client.close()

    def send(self, batch: OutgoingBatch) -> None:
        """Queue `batch` behind the partition's earlier ones; it goes out as soon as the partition has room."""
        self._sent += 1
        self.buffered_bytes += len(batch.payload)
        batch.order, batch.queued_at = self._sent, time.monotonic()
        self._lanes.setdefault(batch.key, _Lane()).queued.append(batch)

    def prioritise(self, key: PartitionKey) -> None:
        """Serve `key`'s batches before every other partition's in each round of requests (a request fills up
        in lane order): for a partition whose writes must not wait behind a backlog, such as a copy's progress."""
        lane = self._lanes.pop(key, None) or _Lane()
        self._lanes = {key: lane, **self._lanes}

    def ready(self, key: PartitionKey) -> bool:
        """True when the target partition is known to take batches: it acknowledged one, a probe found its leader
        serving it, or it was sent to without a refusal. Asked before a partition's data is fetched: a partition
        met for the first time is probed first (one ListOffsets per leader for all of them), so a target still
        creating thousands of new partitions does not fill the byte bound with data for partitions it cannot take
        yet while those it has created wait for room."""
        lane = self._lanes.get(key)
        if lane is None:
            lane = self._lanes[key] = _Lane()
            lane.mark_unready(time.monotonic())
            return False
        return not lane.unready

    def _land(self, *landed: Landed) -> None:
        """Book outcomes; their batches leave the buffer."""
        for outcome in landed:
            self.buffered_bytes -= len(outcome.batch.payload)
        self._landed.extend(landed)

    def in_flight(self, key: PartitionKey) -> int:
        lane = self._lanes.get(key)
        return 0 if lane is None else len(lane.queued) + len(lane.in_flight)

    def idle(self) -> bool:
        return not any(lane.queued or lane.in_flight for lane in self._lanes.values())

    def pump(self) -> None:
        """Send Produce requests per leader holding the next batch of every partition that has room, at most
        `max_in_flight_requests` per leader at a time (what does not fit waits for an answer)."""
        self._raise_failure()
        now = time.monotonic()
        self._probe_unready(now)
        by_node: dict[int, dict[PartitionKey, OutgoingBatch]] = {}
        budget: dict[int, int] = {}  # bytes each leader's free request slots can still carry this round
        for key, lane in self._lanes.items():
            if not lane.queued:
                continue
            head = lane.queued[0]
            if now - head.queued_at > self._delivery_timeout_s:
                raise KafkaOperationError(
                    f"{key[0]}-{key[1]}: not acknowledged within {self._delivery_timeout_s:.0f}s", operation="produce"
                )
            if lane.capacity(now) <= 0:
                continue
            node = self._client.cluster.leader_for_partition(TopicPartition(*key))
            if node is None or node < 0:
                self._refresh_metadata()
                continue
            if lane.in_flight and node != lane.node:
                continue  # one connection keeps a partition's batches in order: the new leader gets them after
            if node not in budget:
                free = self._max_in_flight_requests - self._node_requests.get(node, 0)
                budget[node] = free * (self._max_request_bytes - REQUEST_OVERHEAD_BYTES)
            if budget[node] <= 0:
                continue
            budget[node] -= len(head.payload) + REQUEST_OVERHEAD_BYTES // 4 + len(key[0])
            lane.node = node
            lane.queued.popleft()
            if head.sequence < 0:
                head.sequence = lane.next_sequence
                lane.next_sequence = (lane.next_sequence + head.records) % SEQUENCE_WRAP
                head.payload.set_producer(self.producer_id, self.producer_epoch, head.sequence)
            lane.in_flight.append(head)
            by_node.setdefault(node, {})[key] = head
        for node, batches in by_node.items():
            # Requests to one leader share its connection, which answers them in order: batches stay in order.
            requests = split_requests(batches, self._max_request_bytes)
            free = self._max_in_flight_requests - self._node_requests.get(node, 0)
            for request in requests[:free]:
                self._node_requests[node] = self._node_requests.get(node, 0) + 1
                task = asyncio.ensure_future(self._produce(node, request))
                self._requests.add(task)
                task.add_done_callback(self._requests.discard)
            for request in requests[free:]:  # packing left them over: back to the front of their lanes, in order
                for key, batch in request.items():
                    lane = self._lanes[key]
                    lane.in_flight.remove(batch)
                    lane.queued.appendleft(batch)  # (keeps its sequence: it is the lane's newest)

    def resume(self, key: PartitionKey) -> None:
        """After a refusal: drop what was queued for the partition meanwhile (reported as DROPPED) and let the
        partition send again, from the refused batch's sequence."""
        lane = self._lanes.get(key)
        if lane is None:
            return
        self._land(*(Landed(queued, Outcome.DROPPED) for queued in lane.queued))
        lane.queued.clear()
        lane.refused = False
        self._changed.set()

    async def wait(self) -> None:
        """Return once an answer came in since the last `take_landed`."""
        await self._changed.wait()

    def take_landed(self) -> list[Landed]:
        """The outcomes since the last call, in send order per partition."""
        self._raise_failure()
        self._changed.clear()
        landed, self._landed = self._landed, []
        return landed

    async def _produce(self, node: int, batches: dict[PartitionKey, OutgoingBatch]) -> None:
        try:
            await self._send_request(node, batches)
        finally:
            self._node_requests[node] -= 1
            self._changed.set()  # a request slot is free again

    async def _send_request(self, node: int, batches: dict[PartitionKey, OutgoingBatch]) -> None:
        by_topic: dict[str, list[tuple[int, TargetBatch]]] = {}
        for (topic, partition), batch in batches.items():
            by_topic.setdefault(topic, []).append((partition, batch.payload))
        request = BatchProduceRequest(ACKS_ALL, self._timeout_ms, list(by_topic.items()))
        answers: dict[PartitionKey, tuple[int, int]] = {}
        try:
            response = await self._client.send(node, request)
            answers = {(topic, part[0]): (part[1], part[2]) for topic, parts in response.topics for part in parts}
        except (TimeoutError, AioKafkaError, OSError):
            pass  # no answer at all (connection lost, timed out): every batch of the request is sent again
        except Exception as exc:  # a bug or a broken client: the copy stops, nothing is acknowledged
            self._failure = exc
            self._changed.set()
            return
        for key, batch in batches.items():
            self._answer(key, batch, answers.get(key))
        self._changed.set()

    def _answer(self, key: PartitionKey, batch: OutgoingBatch, answer: tuple[int, int] | None) -> None:
        """Book the broker's answer (error code, base offset) to one batch; None: the request got no answer."""
        lane = self._lanes[key]
        if batch not in lane.in_flight:
            self._failure = KafkaOperationError(f"{key}: an answer for a batch not sent", operation="produce")
            return
        error, base_offset = answer if answer is not None else (0, -1)
        if lane.dropping:
            lane.in_flight.remove(batch)
            lane.dropping -= 1
            self._land(Landed(batch, Outcome.DROPPED))
        elif error == NOT_LEADER_OR_FOLLOWER and not lane.acknowledged_once and lane.in_flight[0] is batch:
            # A new partition its leader has not taken up yet (a broker creating thousands of logs takes a while):
            # asked whether it is ready with a ListOffsets of a few bytes, not sent the batch again and again.
            self._send_again(lane, batch)
            lane.mark_unready(time.monotonic())
            self.readiness_changes += 1
        elif lane.resend or answer is None or is_retriable(error) or lane.in_flight[0] is not batch:
            self._send_again(lane, batch)  # (not the head: answered before an earlier batch, a connection replaced)
        elif error == 0:
            lane.in_flight.popleft()
            lane.acknowledged_once = True
            lane.failures = 0
            self._land(Landed(batch, Outcome.ACKNOWLEDGED, base_offset))
        elif error in _PRODUCER_BROKEN or error in _NOT_ABOUT_THE_RECORDS:
            self._failure = KafkaOperationError(
                f"{key[0]}-{key[1]}: {error_name(error)}", operation="produce", retriable=True
            )
        else:  # refused: the caller re-sends what it wants (`resume`); later batches of the partition are dropped
            lane.in_flight.popleft()
            lane.next_sequence = batch.sequence
            lane.refused = True
            lane.dropping = len(lane.in_flight)
            dropped = list(lane.queued)
            lane.queued.clear()
            self._land(Landed(batch, Outcome.REFUSED, error=error, message=error_name(error)))
            self._land(*(Landed(queued, Outcome.DROPPED) for queued in dropped))

    def _send_again(self, lane: _Lane, batch: OutgoingBatch) -> None:
        """Once everything in flight answered, send the unacknowledged batches again in order, same sequences:
        one that had landed is answered with its first offset again (the broker remembers the last five)."""
        lane.in_flight.remove(batch)
        lane.resend = True
        lane.queued.appendleft(batch)
        if not lane.in_flight:
            lane.queued = deque(sorted(lane.queued, key=lambda queued: queued.order))
            lane.failures += 1
            lane.resend, lane.retry_at = False, time.monotonic() + self._retry_delay(lane.failures)
            self._refresh_metadata()

    def _probe_unready(self, now: float) -> None:
        """One ListOffsets per leader for the unready partitions whose backoff ran out (one probe at a time each)."""
        by_node: dict[int, list[PartitionKey]] = {}
        for key, lane in self._lanes.items():
            if not lane.unready:
                continue
            if lane.unready_since is not None and now - lane.unready_since > self._delivery_timeout_s:
                raise KafkaOperationError(
                    f"{key[0]}-{key[1]}: its leader on the target has not taken it up within "
                    f"{self._delivery_timeout_s:.0f}s",
                    operation="produce",
                    retriable=True,
                )
            if now < lane.retry_at:
                continue
            node = self._client.cluster.leader_for_partition(TopicPartition(*key))
            if node is None or node < 0:
                self._refresh_metadata()
            elif node not in self._probing:
                by_node.setdefault(node, []).append(key)
        for node, keys in by_node.items():
            self._probing.add(node)
            task = asyncio.ensure_future(self._probe(node, keys))
            self._requests.add(task)
            task.add_done_callback(self._requests.discard)

    async def _probe(self, node: int, keys: list[PartitionKey]) -> None:
        by_topic: dict[str, list[tuple[int, int]]] = {}
        for topic, partition in keys:
            by_topic.setdefault(topic, []).append((partition, LATEST_OFFSET))
        ready: set[PartitionKey] = set()
        try:
            response = await self._client.send(node, OffsetRequest(CONSUMER_REPLICA_ID, 0, list(by_topic.items())))
            ready = {(topic, part[0]) for topic, parts in response.topics for part in parts if part[1] == 0}
        except (TimeoutError, AioKafkaError, OSError):
            pass  # no answer: every partition asked stays unready and is asked again after its backoff
        except Exception as exc:  # a bug or a broken client: the copy stops (as for a Produce), never spins
            self._failure = exc
            self._changed.set()
            return
        finally:
            self._probing.discard(node)
        now = time.monotonic()
        for key in keys:
            lane = self._lanes.get(key)
            if lane is None or not lane.unready:
                continue
            if key in ready:
                lane.unready, lane.unready_since, lane.retry_at, lane.failures = False, None, 0.0, 0
                self.readiness_changes += 1
            else:
                lane.failures += 1
                lane.retry_at = now + self._retry_delay(lane.failures)
        if len(ready) < len(keys):
            # a leader may have moved; but mostly a broker creating new partitions has not reached these yet, and
            # metadata that lists every partition of the task, asked after each probe, only adds to its work
            self._refresh_metadata(self._retry_backoff.max_s)
        self._changed.set()

    def _refresh_metadata(self, at_most_every_s: float | None = None) -> None:
        """New metadata, at most once per retry.backoff.ms (or `at_most_every_s`): thousands of partitions failing
        together ask once, not in a stream of back-to-back requests that each list every partition (Kafka's
        producer waits the same)."""
        now = time.monotonic()
        if now - self._metadata_asked >= (at_most_every_s or self._retry_backoff.first_s):
            self._metadata_asked = now
            self._client.force_metadata_update()

    def _retry_delay(self, failures: int) -> float:
        return self._retry_backoff.delay(failures) * random.uniform(1 - RETRY_JITTER, 1 + RETRY_JITTER)

    def _raise_failure(self) -> None:
        if self._failure is not None:
            raise self._failure


# -- both ----------------------------------------------------------------------------------------------------

DEFAULT_FETCH_MAX_BYTES = 52_428_800
DEFAULT_PARTITION_FETCH_BYTES = 1_048_576
PARTITION_BYTES_PER_S = 100 * 1_048_576  # a partition's fetch carries a round trip of this rate (unless set)
FETCH_MAX_WAIT_MS = 100  # a partition that gets room waits at most this long for the next fetch of its leader
# With every partition in the fetch, nothing waits for it to answer: it waits as long as Kafka's consumers do by
# default (fetch.max.wait.ms). An idle source then answers 2 fetches a second per lane instead of 10.
DEFAULT_FETCH_LONG_POLL_MS = 500
NEAR_ROUND_TRIP_S = 0.05  # each this much round trip to a source leader adds a fetch lane (and a default size)
MAX_FETCH_LANES = 4
ROUND_TRIP_PROBES = 3
DEFAULT_REQUEST_TIMEOUT_MS = 30_000
DEFAULT_DELIVERY_TIMEOUT_MS = 120_000


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
) -> BatchLink:
    """Connected clients, with the fetch sizes of the source consumer's settings and the target producer's
    timeouts (their Java names, as the user configured them); their client ids say `purpose` (`client_names`)."""
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
    producer = BatchProducer(
        aio_client(target_props, client_id=producing),
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
    )
    link = BatchLink(fetcher, producer, read_committed)
    try:  # both clusters at once: a task's start-up waits for the slower one only
        await asyncio.gather(fetcher.start(source_topics), producer.start(target_topics))
    except BaseException:
        await link.close()
        raise
    return link
