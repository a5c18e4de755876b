"""data-mirror's committed progress per partition: read whole at start-up (the compacted topic, to its end), then
followed as it grows. The driver and the audit both need it."""

from __future__ import annotations

from collections.abc import Mapping

import structlog

from shared.control.topic_names import PROGRESS_READER_GROUP
from shared.errors import CodecError, KafkaOperationError
from shared.kafka.partition_reader import PartitionReader
from shared.records.progress import Progress, ProgressKey, decode_progress_record

_log = structlog.get_logger(__name__)


def load_progress(
    props: Mapping[str, str], topic: str, flow: str, *, timeout_s: float = 60
) -> dict[tuple[str, int], Progress]:
    """(source topic, partition) -> committed progress, for `flow`; read_committed so aborted epochs do not count."""
    reader = PartitionReader(props, topic, group_id=PROGRESS_READER_GROUP)
    progress: dict[tuple[str, int], Progress] = {}
    try:
        for record in reader.read_through(timeout_s):
            if record.key is None:
                continue
            try:
                key = ProgressKey.decode(record.key)
                if key.flow != flow:
                    continue
                if record.value is None:
                    progress.pop((key.topic, key.partition), None)
                else:
                    progress[(key.topic, key.partition)] = decode_progress_record(record.value)
            except CodecError as exc:
                _log.warning("progress_record_skipped", topic=topic, offset=record.offset, error=str(exc))
        return progress
    except TimeoutError as exc:
        raise KafkaOperationError(
            f"progress topic {topic} not read to its end within {timeout_s}s: {exc}", operation="load progress"
        ) from exc
    finally:
        reader.close()


BATCH = 5000


class ProgressFollower:
    """New progress records of one flow, from the moment it is made."""

    def __init__(self, props: Mapping[str, str], topic: str, flow: str) -> None:
        self._flow = flow
        self._reader = PartitionReader(props, topic, group_id=PROGRESS_READER_GROUP, from_end=True)

    def poll(self) -> list[tuple[tuple[str, int], Progress]]:
        """What arrived since the last call, in order (non-blocking); malformed records are skipped with a warning.

        A failed fetch is left in `read_error` for the driver to report; librdkafka fetches again by itself.
        """
        found: list[tuple[tuple[str, int], Progress]] = []
        while True:
            records = self._reader.read(max_records=BATCH)
            for record in records:
                if record.key is None or record.value is None:
                    continue
                try:
                    key = ProgressKey.decode(record.key)
                    if key.flow == self._flow:
                        found.append(((key.topic, key.partition), decode_progress_record(record.value)))
                except CodecError as exc:
                    _log.warning("progress_record_skipped", topic=record.topic, offset=record.offset, error=str(exc))
            if len(records) < BATCH:
                return found

    @property
    def read_error(self) -> str | None:
        """What failed in the last read, if anything (librdkafka retries by itself)."""
        return self._reader.read_error

    def close(self) -> None:
        """Leave (no group offsets to commit)."""
        self._reader.close()
