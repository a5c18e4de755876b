"""A consumer group on the source that reads and commits as it goes, so that checkpoints have work to do."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping

from confluent_kafka import Consumer, KafkaException, TopicPartition

from shared.kafka.factories import confluent_consumer

COMMIT_EVERY_S = 1.0


class GroupConsumer:
    """Subscribes `group` to the topics and commits its position every second from a thread of its own."""

    def __init__(self, props: Mapping[str, str], group: str, topics: list[str]) -> None:
        self._props = dict(props)
        self.group = group
        self._topics = topics
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="soak-consumer", daemon=True)
        self.consumed = 0
        self.commit_failures = 0
        self.final_commit_ok = False

    def _run(self) -> None:
        consumer = confluent_consumer(
            self._props, **{"group.id": self.group, "auto.offset.reset": "earliest", "enable.auto.commit": False}
        )
        consumer.subscribe(self._topics)
        last_commit = time.monotonic()
        uncommitted = 0
        try:
            while not self._stop.is_set():
                for message in consumer.consume(num_messages=500, timeout=0.5):
                    if message.error() is None:
                        self.consumed += 1
                        uncommitted += 1
                if uncommitted and time.monotonic() - last_commit >= COMMIT_EVERY_S:
                    try:
                        consumer.commit(asynchronous=True)
                        uncommitted = 0
                    except KafkaException:
                        self.commit_failures += 1
                    last_commit = time.monotonic()
            self.final_commit_ok = _commit_with_retries(consumer)
        finally:
            consumer.close()

    def start(self) -> GroupConsumer:
        """Join the group and start reading."""
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 90) -> None:
        """Stop reading, commit the last position (synchronously) and leave the group."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=timeout_s)


def _commit_with_retries(consumer: Consumer, attempts: int = 5) -> bool:
    """A synchronous commit of the current position, retried while a coordinator moves."""
    for _ in range(attempts):
        try:
            consumer.commit(asynchronous=False)
            return True
        except KafkaException as exc:
            if "NO_OFFSET" in str(exc):  # nothing consumed since the last commit: that one stands
                return True
            time.sleep(2)
    return False


def committed_offsets(
    props: Mapping[str, str], group: str, topics: list[str], partitions: int
) -> dict[tuple[str, int], int]:
    """The group's committed offset of every topic-partition (partitions without a commit are left out)."""
    consumer = confluent_consumer(props, **{"group.id": group, "enable.auto.commit": False})
    try:
        wanted = [TopicPartition(topic, p) for topic in topics for p in range(partitions)]
        return {(tp.topic, tp.partition): tp.offset for tp in consumer.committed(wanted, timeout=30) if tp.offset >= 0}
    finally:
        consumer.close()
