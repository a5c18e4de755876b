"""Write raw records to one partition and wait for every acknowledgement (MM2's internal topics: checkpoints,
heartbeats). Blocking (confluent-kafka, idempotent, acks=all); call through `asyncio.to_thread`."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message

from shared.errors import KafkaOperationError
from shared.kafka.cluster_errors import cluster_error
from shared.kafka.factories import confluent_producer

RawRecord = tuple[bytes, bytes]
POLL_EVERY_RECORDS = 1000  # a poll per record is a call into librdkafka per record; flush serves the rest


class RecordWriter:
    """One producer to the cluster called `cluster`; concurrent `write` calls take turns.

    A write ends with a flush, which waits for every queued record and runs delivery reports in the calling thread:
    two writes at once (data-mirror's status thread beside its hand-over requests, two `to_thread` calls) would
    wait for each other's records and could return before their own reports ran.
    """

    def __init__(self, cluster: str, props: Mapping[str, str], **extra: Any) -> None:
        self.cluster = cluster
        settings = {"enable.idempotence": True, "acks": "all", "linger.ms": 5, **extra}
        self._producer = confluent_producer(props, **settings)
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
        offsets = [-1] * len(records)
        failures: list[KafkaError] = []

        def delivered(index: int) -> Any:
            def report(error: KafkaError | None, message: Message) -> None:
                if error is not None:
                    failures.append(error)
                else:
                    offsets[index] = message.offset() or 0

            return report

        for index, (key, value) in enumerate(records):
            while True:
                try:
                    if partition is None:
                        self._producer.produce(topic, value=value, key=key, on_delivery=delivered(index))
                    else:
                        self._producer.produce(
                            topic, value=value, key=key, partition=partition, on_delivery=delivered(index)
                        )
                    break
                except BufferError:
                    self._producer.poll(0.1)  # the local queue is full: let deliveries drain it
                except KafkaException as exc:
                    raise cluster_error(exc, cluster=self.cluster, operation="produce", resource=topic) from exc
            if index % POLL_EVERY_RECORDS == 0:
                self._producer.poll(0)  # serve delivery reports now and then; flush serves the rest
        remaining = self._producer.flush(timeout_s)
        if remaining:
            raise KafkaOperationError(
                f"cluster {self.cluster}: produce to {topic} failed: "
                f"{remaining} records not acknowledged in {timeout_s}s",
                operation="produce",
            )
        if failures:
            failure = KafkaException(failures[0])
            raise cluster_error(failure, cluster=self.cluster, operation="produce", resource=topic) from failure
        return offsets

    def close(self, timeout_s: float = 10) -> None:
        """Deliver what is queued (bounded) and let the producer go."""
        self._producer.flush(timeout_s)
