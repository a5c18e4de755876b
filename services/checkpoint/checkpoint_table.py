"""The latest checkpoint of every group-partition, as the checkpoints topic holds it (MM2's CheckpointStore).

Fed both by the followed checkpoints topic (what any instance wrote) and by this instance's own writes.
Invariant: an entry is only replaced by a record at a higher offset of the checkpoints topic, so a record
read late never hides a newer one this instance already wrote, whatever order the two arrive in. A record this
instance is writing is known by its bytes when it is read back, so it is skipped without being decoded (at 10,000
commits a second that decoding was a tenth of the service's CPU); the writer `apply`s it once acknowledged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import structlog

from shared.kafka.follow import FollowedRecord
from shared.partition_key import PartitionKey
from shared.records import Checkpoint
from shared.records.reading import decoded

_log = structlog.get_logger(__name__)
OWN_WRITES_KEPT = 1_000_000  # being written and not yet read back; beyond this they are decoded as any record


class CheckpointTable:
    """group -> (remote topic, partition) -> latest checkpoint; `wanted` limits which groups are kept."""

    def __init__(self, wanted: Callable[[str], bool] | None = None) -> None:
        self._wanted = wanted or (lambda _group: True)
        self._latest: dict[str, dict[PartitionKey, tuple[int, Checkpoint]]] = {}
        self._writing: dict[bytes, bytes] = {}  # key -> value of records this instance is writing
        self.invalid_records = 0

    def apply(self, checkpoint: Checkpoint, log_offset: int) -> bool:
        """Keep `checkpoint` (written at `log_offset` of the checkpoints topic) if it is the newest; True if kept."""
        if not self._wanted(checkpoint.group):
            return False
        partitions = self._latest.setdefault(checkpoint.group, {})
        key = (checkpoint.topic, checkpoint.partition)
        current = partitions.get(key)
        if current is not None and current[0] >= log_offset:
            return False
        partitions[key] = (log_offset, checkpoint)
        return True

    def writing(self, records: Sequence[tuple[bytes, bytes]]) -> None:
        """Records (key, value) this instance is about to write: when read back they are skipped undecoded, as the
        writer `apply`s them itself once acknowledged."""
        if len(self._writing) + len(records) > OWN_WRITES_KEPT:
            self._writing.clear()
        self._writing.update(records)

    def not_writing(self, records: Sequence[tuple[bytes, bytes]]) -> None:
        """A write failed: whatever of `records` did reach the topic is read back and applied as any record."""
        for key, _ in records:
            self._writing.pop(key, None)

    def handle_records(self, records: Sequence[FollowedRecord]) -> None:
        """Apply records read from the checkpoints topic; undecodable ones are counted and skipped (as MM2)."""
        writing = self._writing
        others = []
        for record in records:
            if record.key is not None and record.value is not None and writing.get(record.key) == record.value:
                del writing[record.key]
                continue
            others.append(record)
        for record, checkpoint in decoded(others, lambda key, value, _: Checkpoint.decode(key, value), self._skip):
            self.apply(checkpoint, record.offset)

    def _skip(self, record: FollowedRecord, reason: str) -> None:
        self.invalid_records += 1
        _log.warning("invalid_checkpoint_skipped", topic=record.topic, offset=record.offset, error=reason)

    def for_group(self, group: str) -> Mapping[PartitionKey, Checkpoint]:
        """The latest checkpoints of `group` by (remote topic, partition); empty if none."""
        return {key: checkpoint for key, (_, checkpoint) in self._latest.get(group, {}).items()}

    def groups(self) -> list[str]:
        """Every group with at least one checkpoint."""
        return list(self._latest)

    def partition_count(self, groups: Sequence[str] | None = None) -> int:
        """Group-partitions with a checkpoint (over `groups`, or all)."""
        names = self._latest if groups is None else groups
        return sum(len(self._latest.get(group, {})) for group in names)
