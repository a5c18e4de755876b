"""How many records of a remote topic a `read_committed` consumer has received: the progress of an exactly-once
copy, whose end offsets also count transaction markers and records of transactions not yet committed.

A thread reads the whole topic from its start as the copy goes, so the moment the count reaches the data set is
when an application reading the target could see every record, commit latency included.

An exactly-once copy becomes visible in bursts (a commit makes a transaction's records readable at once), and
librdkafka stops fetching a partition for `fetch.queue.backoff.ms` (1 s by default) once its local queue holds more
than `queued.max.messages.kbytes` (64 MiB): a commit of 100 MB then took this reader over a second to receive,
though the records were all on the target. The reader fetches again after 10 ms, so what it measures is the tool.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping

from confluent_kafka import OFFSET_BEGINNING, TopicPartition

from shared.kafka.factories import confluent_consumer

BATCH = 10_000
WAIT_S = 0.05
QUEUE_BACKOFF_MS = 10


class CommittedRecords:
    """Counts the records of `topic` (its `partitions`) a read_committed consumer received; `total()` is the count."""

    def __init__(self, props: Mapping[str, str], topic: str, partitions: int) -> None:
        self._consumer = confluent_consumer(
            props,
            **{
                "group.id": "strait-bench-committed",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                "enable.partition.eof": False,
                "fetch.queue.backoff.ms": QUEUE_BACKOFF_MS,
            },
        )
        self._topic, self._partitions = topic, partitions
        self._count = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, name="committed-records", daemon=True)
        self._thread.start()

    def total(self) -> int:
        """Records received so far (0 while the tool has not made the topic yet)."""
        return self._count

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        self._consumer.close()

    def _read(self) -> None:
        while not self._stop.is_set() and not self._exists():
            time.sleep(WAIT_S)
        self._consumer.assign([TopicPartition(self._topic, p, OFFSET_BEGINNING) for p in range(self._partitions)])
        while not self._stop.is_set():
            messages = self._consumer.consume(BATCH, WAIT_S)
            self._count += sum(1 for message in messages if message.error() is None)

    def _exists(self) -> bool:
        try:
            found = self._consumer.list_topics(self._topic, timeout=5).topics.get(self._topic)
        except Exception:  # KafkaException: not answered now, asked again
            return False
        return found is not None and found.error is None and len(found.partitions) == self._partitions
