"""The driver's view of its tasks: it follows the progress topic they commit to (read_committed)."""

from __future__ import annotations

from collections.abc import Mapping

import structlog
from confluent_kafka import OFFSET_END, TopicPartition

from services.data_mirror.progress import Progress, ProgressKey, decode_progress_record
from shared.control.topic_names import PROGRESS_READER_GROUP
from shared.errors import CodecError
from shared.kafka.factories import confluent_consumer

_log = structlog.get_logger(__name__)


class ProgressFollower:
    """New progress records of one flow, from the moment it is made."""

    def __init__(self, props: Mapping[str, str], topic: str, flow: str) -> None:
        self._flow = flow
        self._consumer = confluent_consumer(
            props,
            **{
                "group.id": PROGRESS_READER_GROUP,
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
            },
        )
        self._consumer.assign([TopicPartition(topic, 0, OFFSET_END)])

    def poll(self) -> list[tuple[tuple[str, int], Progress]]:
        """What arrived since the last call, in order (non-blocking); malformed records are skipped with a warning."""
        found: list[tuple[tuple[str, int], Progress]] = []
        while True:
            messages = self._consumer.consume(num_messages=5000, timeout=0)
            for message in messages:
                if message.error() or message.key() is None or message.value() is None:
                    continue
                try:
                    key = ProgressKey.decode(message.key() or b"")
                    if key.flow == self._flow:
                        found.append(((key.topic, key.partition), decode_progress_record(message.value() or b"")))
                except CodecError as exc:
                    _log.warning(
                        "progress_record_skipped", topic=message.topic(), offset=message.offset(), error=str(exc)
                    )
            if len(messages) < 5000:
                return found

    def close(self) -> None:
        """Leave (no group offsets to commit)."""
        self._consumer.close()
