"""Ready-made record batches produced to target partitions over the Kafka protocol (the batch path's target side).

Idempotence, as Kafka's own producer keeps it: the producer id comes from InitProducerId, every partition has
a running sequence, at most five batches per partition are in flight (the broker remembers the last five, so a
retried batch that had landed is answered with its first offset instead of being written twice), and until a
partition's first batch is acknowledged only that batch is in flight. A retriable failure sends everything
unacknowledged again with the same sequences, after a backoff that grows while the failures go on; a refusal (too
large, invalid, not allowed) is the caller's to handle: the batches sent after it are dropped (the broker refuses
them as out of sequence) and reported so. What an error code means is `error_classes`' table.
Every outcome is an `Outcome` value, kept apart from the broker's error codes (UNKNOWN_SERVER_ERROR is -1).

Transactional (exactly-once, given a `TransactionCoordinator`): the producer id and epoch come from the id's
coordinator (fencing every earlier producer of the id), every batch carries the transactional bit and goes in a
Produce request naming the id, and a partition's batches wait until the partition was added to the open
transaction. Nothing is sent outside a transaction; `commit_transaction` ends one once every batch was answered.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from aiokafka.client import AIOKafkaClient
from aiokafka.errors import KafkaError as AioKafkaError
from aiokafka.protocol.offset import OffsetRequest
from aiokafka.protocol.transaction import InitProducerIdRequest
from aiokafka.structs import TopicPartition

from shared.errors import KafkaOperationError
from shared.kafka.error_classes import ErrorClass, error_class, error_name
from shared.kafka.error_codes import NOT_LEADER_OR_FOLLOWER
from shared.kafka.outgoing_batches import (
    Landed,
    Outcome,
    OutgoingBatch,
    request_share,
    split_requests,
    usable_request_bytes,
)
from shared.kafka.produce_request import BatchProduceRequest
from shared.kafka.producer_transaction import ProducerTransaction
from shared.kafka.record_batches import TargetBatch
from shared.kafka.transaction_coordinator import TransactionCoordinator
from shared.partition_key import PartitionKey
from shared.retry import Backoff, retry_async

ACKS_ALL = -1
MAX_IN_FLIGHT_PER_PARTITION = 5
# A partition's retriable failures in a row wait retry.backoff.ms, doubling up to retry.backoff.max.ms, +-20% (as
# Kafka's producer, KIP-580): thousands of partitions a target has not created yet are not sent again every 100 ms.
DEFAULT_RETRY_BACKOFF = Backoff(first_s=0.1, max_s=1.0)
RETRY_JITTER = 0.2
INIT_BACKOFF = Backoff(first_s=0.1, max_s=1.0)
INIT_TIMEOUT_S = 60  # a producer's initialisation (its id, or its transactions) waits at most this long
LATEST_OFFSET = -1  # ListOffsets' timestamp for the log end
CONSUMER_REPLICA_ID = -1
SEQUENCE_WRAP = 2**31  # sequences are int32 and wrap to 0, as Kafka's producer wraps them
DEFAULT_MAX_REQUEST_BYTES = 1_048_576  # Kafka's producer default `max.request.size`
DEFAULT_BUFFER_BYTES = 33_554_432  # Kafka's producer default `buffer.memory`
DEFAULT_MAX_IN_FLIGHT_REQUESTS = 5  # Kafka's producer default `max.in.flight.requests.per.connection`


@dataclass
class _TargetPartition:
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
    """An idempotent producer of ready-made batches (acks=all), a queue per target partition."""

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
        transactions: TransactionCoordinator | None = None,
    ) -> None:
        self._client = client
        self._transaction = ProducerTransaction(transactions, self._addition_answered) if transactions else None
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
        self._targets: dict[PartitionKey, _TargetPartition] = {}
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
        if self._transaction is not None:
            self.producer_id, self.producer_epoch = await self._transaction.init()
            return
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
                retriable=error_class(response.error_code) is ErrorClass.RETRY,
            )
        self.producer_id, self.producer_epoch = response.producer_id, response.producer_epoch

    async def close(self) -> None:
        for task in list(self._requests):
            task.cancel()
        await self._client.close()

    # -- transactions (exactly-once) ---------------------------------------------------------------------
    def begin_transaction(self) -> None:
        """Open a transaction: batches sent from now on are in it (each partition added before its first)."""
        assert self._transaction is not None, "a producer without a transactional id"
        self._transaction.begin()

    async def commit_transaction(self) -> None:
        """Commit the open transaction; every batch sent in it must have been answered (`idle`)."""
        assert self._transaction is not None
        self._raise_failure()
        if not self.idle():
            raise KafkaOperationError("commit with batches not yet answered", operation="commit transaction")
        await self._transaction.end(commit=True)

    async def abort_transaction(self, timeout_s: float) -> None:
        """Abort the open transaction: what is queued is dropped (reported as DROPPED), what is in flight is waited
        for (at most `timeout_s`), then the coordinator aborts. The partitions' sequences go on from what was sent,
        so a task that aborts only writes on where nothing was dropped (its progress) before it starts again."""
        assert self._transaction is not None
        for target in self._targets.values():
            self._land(*(Landed(queued, Outcome.DROPPED) for queued in target.queued))
            target.queued.clear()
        deadline = time.monotonic() + timeout_s
        while any(target.in_flight for target in self._targets.values()) and time.monotonic() < deadline:
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), max(0.0, deadline - time.monotonic()))
        await self._transaction.end(commit=False)

    def _addition_answered(self, error: BaseException | None) -> None:
        if error is not None:
            self._failure = error
        self._changed.set()

    def send(self, batch: OutgoingBatch) -> None:
        """Queue `batch` behind the partition's earlier ones; it goes out as soon as the partition has room."""
        self._sent += 1
        self.buffered_bytes += len(batch.payload)
        batch.order, batch.queued_at = self._sent, time.monotonic()
        self._targets.setdefault(batch.key, _TargetPartition()).queued.append(batch)

    def prioritise(self, key: PartitionKey) -> None:
        """Serve `key`'s batches before every other partition's in each round of requests (a request fills up in
        partition order): for a partition whose writes must not wait behind a backlog, such as a copy's progress."""
        target = self._targets.pop(key, None) or _TargetPartition()
        self._targets = {key: target, **self._targets}

    def ready(self, key: PartitionKey) -> bool:
        """True when the target partition is known to take batches: it acknowledged one, a probe found its leader
        serving it, or it was sent to without a refusal. Asked before a partition's data is fetched: a partition
        met for the first time is probed first (one ListOffsets per leader for all of them), so a target still
        creating thousands of new partitions does not fill the byte bound with data for partitions it cannot take
        yet while those it has created wait for room."""
        target = self._targets.get(key)
        if target is None:
            target = self._targets[key] = _TargetPartition()
            target.mark_unready(time.monotonic())
            return False
        return not target.unready

    def _land(self, *landed: Landed) -> None:
        """Book outcomes; their batches leave the buffer."""
        for outcome in landed:
            self.buffered_bytes -= len(outcome.batch.payload)
        self._landed.extend(landed)

    def in_flight(self, key: PartitionKey) -> int:
        target = self._targets.get(key)
        return 0 if target is None else len(target.queued) + len(target.in_flight)

    def idle(self) -> bool:
        return not any(target.queued or target.in_flight for target in self._targets.values())

    def pump(self) -> None:
        """Send Produce requests per leader holding the next batch of every partition that has room, at most
        `max_in_flight_requests` per leader at a time (what does not fit waits for an answer)."""
        self._raise_failure()
        now = time.monotonic()
        self._probe_unready(now)
        by_node: dict[int, dict[PartitionKey, OutgoingBatch]] = {}
        budget: dict[int, int] = {}  # bytes each leader's free request slots can still carry this round
        to_add: set[PartitionKey] = set()
        for key, target in self._targets.items():
            if not target.queued:
                continue
            head = target.queued[0]
            if now - head.queued_at > self._delivery_timeout_s:
                raise KafkaOperationError(
                    f"{key[0]}-{key[1]}: not acknowledged within {self._delivery_timeout_s:.0f}s", operation="produce"
                )
            if target.capacity(now) <= 0:
                continue
            if self._transaction is not None and not self._transaction.admits(key, to_add):
                continue
            node = self._client.cluster.leader_for_partition(TopicPartition(*key))
            if node is None or node < 0:
                self._refresh_metadata()
                continue
            if target.in_flight and node != target.node:
                continue  # one connection keeps a partition's batches in order: the new leader gets them after
            if node not in budget:
                free = self._max_in_flight_requests - self._node_requests.get(node, 0)
                budget[node] = free * usable_request_bytes(self._max_request_bytes)
            if budget[node] <= 0:
                continue
            budget[node] -= request_share(key, head)
            target.node = node
            target.queued.popleft()
            if head.sequence < 0:
                head.sequence = target.next_sequence
                target.next_sequence = (target.next_sequence + head.records) % SEQUENCE_WRAP
                head.payload.set_producer(
                    self.producer_id, self.producer_epoch, head.sequence, transactional=self._transaction is not None
                )
            target.in_flight.append(head)
            by_node.setdefault(node, {})[key] = head
        if self._transaction is not None:
            self._transaction.add(to_add)
        for node, batches in by_node.items():
            # Requests to one leader share its connection, which answers them in order: batches stay in order.
            requests = split_requests(batches, self._max_request_bytes)
            free = self._max_in_flight_requests - self._node_requests.get(node, 0)
            for request in requests[:free]:
                self._node_requests[node] = self._node_requests.get(node, 0) + 1
                task = asyncio.ensure_future(self._produce(node, request))
                self._requests.add(task)
                task.add_done_callback(self._requests.discard)
            for request in requests[free:]:  # packing left them over: back to the front of their queues, in order
                for key, batch in request.items():
                    target = self._targets[key]
                    target.in_flight.remove(batch)
                    target.queued.appendleft(batch)  # (keeps its sequence: it is the target's newest)

    def resume(self, key: PartitionKey) -> None:
        """After a refusal: drop what was queued for the partition meanwhile (reported as DROPPED) and let the
        partition send again, from the refused batch's sequence."""
        target = self._targets.get(key)
        if target is None:
            return
        self._land(*(Landed(queued, Outcome.DROPPED) for queued in target.queued))
        target.queued.clear()
        target.refused = False
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
        transactional_id = self._transaction.transactional_id if self._transaction is not None else None
        request = BatchProduceRequest(
            ACKS_ALL, self._timeout_ms, list(by_topic.items()), transactional_id=transactional_id
        )
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
        target = self._targets[key]
        if batch not in target.in_flight:
            self._failure = KafkaOperationError(f"{key}: an answer for a batch not sent", operation="produce")
            return
        error, base_offset = answer if answer is not None else (0, -1)
        if target.dropping:
            target.in_flight.remove(batch)
            target.dropping -= 1
            self._land(Landed(batch, Outcome.DROPPED))
        elif error == NOT_LEADER_OR_FOLLOWER and not target.acknowledged_once and target.in_flight[0] is batch:
            # A new partition its leader has not taken up yet (a broker creating thousands of logs takes a while):
            # asked whether it is ready with a ListOffsets of a few bytes, not sent the batch again and again.
            self._send_again(target, batch)
            target.mark_unready(time.monotonic())
            self.readiness_changes += 1
        elif target.resend or answer is None or target.in_flight[0] is not batch or _retried(error):
            self._send_again(target, batch)  # (not the head: answered before an earlier batch, a connection replaced)
        elif error == 0:
            target.in_flight.popleft()
            target.acknowledged_once = True
            target.failures = 0
            self._land(Landed(batch, Outcome.ACKNOWLEDGED, base_offset))
        elif error_class(error) in (ErrorClass.FAIL_TASK, ErrorClass.TOPIC_GONE):  # about the producer, the topic
            self._failure = KafkaOperationError(
                f"{key[0]}-{key[1]}: {error_name(error)}", operation="produce", retriable=True
            )
        else:  # refused: the caller re-sends what it wants (`resume`); later batches of the partition are dropped
            target.in_flight.popleft()
            target.next_sequence = batch.sequence
            target.refused = True
            target.dropping = len(target.in_flight)
            dropped = list(target.queued)
            target.queued.clear()
            self._land(Landed(batch, Outcome.REFUSED, error=error, message=error_name(error)))
            self._land(*(Landed(queued, Outcome.DROPPED) for queued in dropped))

    def _send_again(self, target: _TargetPartition, batch: OutgoingBatch) -> None:
        """Once everything in flight answered, send the unacknowledged batches again in order, same sequences:
        one that had landed is answered with its first offset again (the broker remembers the last five)."""
        target.in_flight.remove(batch)
        target.resend = True
        target.queued.appendleft(batch)
        if not target.in_flight:
            target.queued = deque(sorted(target.queued, key=lambda queued: queued.order))
            target.failures += 1
            target.resend, target.retry_at = False, time.monotonic() + self._retry_delay(target.failures)
            self._refresh_metadata()

    def _probe_unready(self, now: float) -> None:
        """One ListOffsets per leader for the unready partitions whose backoff ran out (one probe at a time each)."""
        by_node: dict[int, list[PartitionKey]] = {}
        for key, target in self._targets.items():
            if not target.unready:
                continue
            if target.unready_since is not None and now - target.unready_since > self._delivery_timeout_s:
                raise KafkaOperationError(
                    f"{key[0]}-{key[1]}: its leader on the target has not taken it up within "
                    f"{self._delivery_timeout_s:.0f}s",
                    operation="produce",
                    retriable=True,
                )
            if now < target.retry_at:
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
            target = self._targets.get(key)
            if target is None or not target.unready:
                continue
            if key in ready:
                target.unready, target.unready_since, target.retry_at, target.failures = False, None, 0.0, 0
                self.readiness_changes += 1
            else:
                target.failures += 1
                target.retry_at = now + self._retry_delay(target.failures)
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


def _retried(error: int) -> bool:
    """A batch answered with `error` is sent again (a leader moved, a timeout): nothing about its records."""
    return error != 0 and error_class(error) is ErrorClass.RETRY
