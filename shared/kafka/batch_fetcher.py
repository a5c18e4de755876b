"""Raw record batches fetched from source partition leaders over the Kafka protocol (the batch path's source side).

aiokafka's protocol client does the connections, metadata, version negotiation, TLS and SASL; this module only
builds Fetch, ListOffsets-free epoch look-ups and ApiVersions requests. The record bytes are never decoded here
(`record_batches` does that). A "lane" here is one fetch session of a source leader (a distant leader is fetched
in several at once), never a target partition.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from aiokafka.client import AIOKafkaClient
from aiokafka.errors import KafkaError as AioKafkaError
from aiokafka.protocol.admin import ApiVersionRequest
from aiokafka.structs import TopicPartition

from shared.errors import KafkaOperationError
from shared.kafka.error_codes import UNKNOWN_TOPIC_OR_PARTITION
from shared.kafka.fetch_session import FetchSession
from shared.kafka.leader_epochs import (
    NO_EPOCH,
    EpochEndsRequest,
    EpochFetchRequest,
    LeaderEpochsRequest,
    epoch_end_answers,
)
from shared.kafka.leader_epochs import leader_epochs as epochs_of
from shared.partition_key import PartitionKey

READ_UNCOMMITTED, READ_COMMITTED = 0, 1
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

    async def add_topics(self, topics: Sequence[str]) -> None:
        """Fetch `topics` too from now on: their metadata and leader epochs are read (a reader that goes topic by
        topic, as the verifier does)."""
        new = [topic for topic in topics if topic not in self._topics]
        if not new:
            return
        self._topics += new
        await self._client.set_topics(self._topics)
        await self._refresh_epochs()
        self.changes += 1

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
