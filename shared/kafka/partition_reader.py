"""One partition of one of Strait's own topics, read without a consumer group (blocking, confluent-kafka).

For readers that assign a single partition themselves and keep their place in memory: data-mirror's start-up
read of its progress topic and its driver's live view of it. read_committed, so what an aborted transaction
wrote is never seen.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, KafkaError, KafkaException, TopicPartition

from shared.kafka.errors import translate_kafka_error
from shared.kafka.factories import confluent_consumer
from shared.kafka.follow import FollowedRecord

# A topic created a moment ago: not in the client's metadata yet, or its leader not elected yet.
_NOT_YET = frozenset(
    {KafkaError._UNKNOWN_PARTITION, KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE}
)


class PartitionReader:
    """Reads `topic` partition `partition` from its start (`from_end=False`) or from the moment it is made."""

    def __init__(
        self, props: Mapping[str, str], topic: str, *, group_id: str, from_end: bool = False, partition: int = 0
    ) -> None:
        self.topic = topic
        self._partition = TopicPartition(topic, partition)
        self._consumer = confluent_consumer(
            props, **{"group.id": group_id, "enable.auto.commit": False, "isolation.level": "read_committed"}
        )
        self._consumer.assign([TopicPartition(topic, partition, OFFSET_END if from_end else OFFSET_BEGINNING)])
        self.read_error: str | None = None  # what failed in the last `read`, if anything

    def end_offset(self, timeout_s: float) -> int:
        """The partition's end offset, asking again until `timeout_s` while the topic is too new to have a leader."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                return int(self._consumer.get_watermark_offsets(self._partition, timeout=timeout_s)[1])
            except KafkaException as exc:
                error = exc.args[0] if exc.args else None
                passing = isinstance(error, KafkaError) and (error.code() in _NOT_YET or error.retriable())
                if not passing or time.monotonic() > deadline:
                    raise translate_kafka_error(exc, operation=f"end offset of {self.topic}") from exc
                time.sleep(0.5)

    def position(self) -> int:
        """The offset the next read starts at (past transaction markers too)."""
        return int(self._consumer.position([self._partition])[0].offset)

    def read(self, *, max_records: int = 5000, timeout_s: float = 0.0) -> list[FollowedRecord]:
        """What arrived, in order, up to `max_records`; a failed fetch is kept in `read_error` until a clean read."""
        self.read_error = None
        records: list[FollowedRecord] = []
        for message in self._consumer.consume(num_messages=max_records, timeout=timeout_s):
            error = message.error()
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    self.read_error = f"reading {self.topic}: {error.name()}: {error.str()}"
                continue
            records.append(
                FollowedRecord(
                    message.offset() or 0,
                    message.key(),
                    message.value(),
                    message.timestamp()[1],
                    self.topic,
                    message.headers() or (),
                )
            )
        return records

    def close(self) -> None:
        """Leave (there are no group offsets to commit)."""
        self._consumer.close()
