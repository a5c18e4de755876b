"""Write raw records to one partition and wait for every acknowledgement (MM2's internal topics: checkpoints,
heartbeats). Idempotent, acks=all (confluent-kafka).

`RecordWriter` blocks (call it through `asyncio.to_thread`, or from a thread of its own). `LoopRecordWriter` is
for an event loop that writes thousands of records a second: a delivery report is a Python call that needs the
GIL, so a writer thread waits for the GIL once per record while the loop computes (300 records: 6 ms with an idle
loop, 370 ms with a busy one, measured here); produced and polled on the loop's own thread, nothing waits.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from shared.errors import KafkaOperationError
from shared.kafka.cluster_errors import cluster_error
from shared.kafka.factories import confluent_producer

RawRecord = tuple[bytes, bytes]
POLL_EVERY_RECORDS = 1000  # a poll per record is a call into librdkafka per record; flush serves the rest
LOOP_POLL_S = 0.002  # how often the loop writer looks for delivery reports while it waits for them
Report = Callable[[KafkaError | None, Message], None]


def _producer(props: Mapping[str, str], extra: Mapping[str, Any]) -> Producer:
    settings = {"enable.idempotence": True, "acks": "all", "linger.ms": 5, **extra}
    return confluent_producer(props, **settings)


class _Deliveries:
    """One write's delivery reports: the offset each record got, the failures, how many are still out."""

    def __init__(self, cluster: str, topic: str, count: int) -> None:
        self._cluster, self._topic = cluster, topic
        self.offsets = [-1] * count
        self.failures: list[KafkaError] = []
        self.pending = count

    def report(self, index: int) -> Report:
        def delivered(error: KafkaError | None, message: Message) -> None:
            self.pending -= 1
            if error is not None:
                self.failures.append(error)
            else:
                self.offsets[index] = message.offset() or 0

        return delivered

    def try_produce(self, producer: Producer, index: int, record: RawRecord, partition: int | None) -> bool:
        """Queue one record; False when the local queue is full (the caller lets deliveries drain it, then retries)."""
        key, value = record
        try:
            if partition is None:
                producer.produce(self._topic, value=value, key=key, on_delivery=self.report(index))
            else:
                producer.produce(self._topic, value=value, key=key, partition=partition, on_delivery=self.report(index))
        except BufferError:
            return False
        except KafkaException as exc:
            raise cluster_error(exc, cluster=self._cluster, operation="produce", resource=self._topic) from exc
        return True

    def not_acknowledged(self, remaining: int, timeout_s: float) -> KafkaOperationError:
        return KafkaOperationError(
            f"cluster {self._cluster}: produce to {self._topic} failed: "
            f"{remaining} records not acknowledged in {timeout_s}s",
            operation="produce",
        )

    def result(self) -> list[int]:
        """The offsets, or the first failure as the error it means."""
        if self.failures:
            failure = KafkaException(self.failures[0])
            raise cluster_error(failure, cluster=self._cluster, operation="produce", resource=self._topic) from failure
        return self.offsets


class RecordWriter:
    """One producer to the cluster called `cluster`; concurrent `write` calls take turns.

    A write ends with a flush, which waits for every queued record and runs delivery reports in the calling thread:
    two writes at once (data-mirror's status thread beside its hand-over requests, two `to_thread` calls) would
    wait for each other's records and could return before their own reports ran.
    """

    def __init__(self, cluster: str, props: Mapping[str, str], **extra: Any) -> None:
        self.cluster = cluster
        self._producer = _producer(props, extra)
        self._one_write = threading.Lock()

    def write(
        self, topic: str, records: Sequence[RawRecord], *, partition: int | None = 0, timeout_s: float = 30
    ) -> list[int]:
        """Produce `records` (key, value) in order; return the offset each got. Raises KafkaOperationError.

        `partition=None` lets the producer's partitioner choose by key (set `partitioner` to match another writer).
        """
        with self._one_write:
            return self._write(topic, records, partition, timeout_s)

    def _write(self, topic: str, records: Sequence[RawRecord], partition: int | None, timeout_s: float) -> list[int]:
        deliveries = _Deliveries(self.cluster, topic, len(records))
        for index, record in enumerate(records):
            while not deliveries.try_produce(self._producer, index, record, partition):
                self._producer.poll(0.1)  # the local queue is full: let deliveries drain it
            if index % POLL_EVERY_RECORDS == 0:
                self._producer.poll(0)  # serve delivery reports now and then; flush serves the rest
        remaining = self._producer.flush(timeout_s)
        if remaining:
            raise deliveries.not_acknowledged(remaining, timeout_s)
        return deliveries.result()

    def close(self, timeout_s: float = 10) -> None:
        """Deliver what is queued (bounded) and let the producer go."""
        self._producer.flush(timeout_s)


class LoopRecordWriter:
    """One producer to the cluster called `cluster`, used from one event loop; writes take turns.

    Records are queued and delivery reports served on the loop's thread (poll(0) never blocks), handing the loop
    back while the acknowledgements are on their way.
    """

    def __init__(self, cluster: str, props: Mapping[str, str], **extra: Any) -> None:
        self.cluster = cluster
        self._producer = _producer(props, extra)
        self._one_write = asyncio.Lock()

    async def write(
        self, topic: str, records: Sequence[RawRecord], *, partition: int | None = 0, timeout_s: float = 30
    ) -> list[int]:
        """Produce `records` (key, value) in order; return the offset each got. Raises KafkaOperationError."""
        async with self._one_write:
            deliveries = _Deliveries(self.cluster, topic, len(records))
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout_s
            for index, record in enumerate(records):
                while not deliveries.try_produce(self._producer, index, record, partition):
                    self._producer.poll(0)  # the local queue is full: serve reports, let it drain
                    await asyncio.sleep(LOOP_POLL_S)
                if index % POLL_EVERY_RECORDS == POLL_EVERY_RECORDS - 1:
                    self._producer.poll(0)
                    await asyncio.sleep(0)  # a large write never holds the loop in one piece
            while deliveries.pending:
                self._producer.poll(0)
                if deliveries.pending:
                    await self._wait(deliveries, deadline, timeout_s)
            return deliveries.result()

    async def _wait(self, deliveries: _Deliveries, deadline: float, timeout_s: float) -> None:
        if asyncio.get_running_loop().time() >= deadline:
            raise deliveries.not_acknowledged(deliveries.pending, timeout_s)
        await asyncio.sleep(LOOP_POLL_S)

    async def close(self, timeout_s: float = 10) -> None:
        """Deliver what is queued (bounded) and let the producer go."""
        async with self._one_write:
            await asyncio.to_thread(self._producer.flush, timeout_s)
