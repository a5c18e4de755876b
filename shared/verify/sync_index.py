"""A flow's offset syncs per source partition, as anchors: which sync places a target offset, and the reverse.

Unlike the translation store (`shared.offset_sync_store`), which keeps 64 syncs spaced for consumer offsets, the
verifier keeps every sync read: it places every target record, not one offset per group.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable

from shared.errors import CodecError
from shared.kafka.follow import FollowedRecord
from shared.kafka.partition_reader import PartitionReader
from shared.records.offset_sync import OffsetSync
from shared.verify.align import Anchor


class SyncIndex:
    """(topic, partition) -> syncs ordered by downstream offset (the newest sync wins a tie)."""

    def __init__(self) -> None:
        self._by_partition: dict[tuple[str, int], dict[int, int]] = {}  # downstream -> upstream, newest kept
        self._sorted: dict[tuple[str, int], list[Anchor]] = {}
        self.skipped = 0  # records of the syncs topic that are not offset syncs

    @classmethod
    def of(cls, records: Iterable[FollowedRecord]) -> SyncIndex:
        """Index the records of an offset-syncs topic, in the order read."""
        index = cls()
        index.add_records(records)
        return index

    @classmethod
    def of_more(cls, index: SyncIndex, reader: PartitionReader) -> SyncIndex:
        """`index` with what `reader` (following the offset-syncs topic) has read since the last call."""
        while records := reader.read(max_records=5000):
            index.add_records(records)
        return index

    def add_records(self, records: Iterable[FollowedRecord]) -> None:
        """Add the offset syncs among `records`, in the order read; count the rest as skipped."""
        for record in records:
            if record.key is None or record.value is None:
                self.skipped += 1
                continue
            try:
                sync = OffsetSync.decode(record.key, record.value)
            except CodecError:
                self.skipped += 1
                continue
            self.add(sync)

    def add(self, sync: OffsetSync) -> None:
        """One more sync, newer than every sync added before."""
        key = (sync.topic, sync.partition)
        self._by_partition.setdefault(key, {})[sync.downstream_offset] = sync.upstream_offset
        self._sorted.pop(key, None)

    def anchors(self, topic: str, partition: int) -> list[Anchor]:
        """(upstream, downstream) of every sync of the partition, by downstream offset."""
        key = (topic, partition)
        if key not in self._sorted:
            pairs = self._by_partition.get(key, {})
            self._sorted[key] = sorted(((up, down) for down, up in pairs.items()), key=lambda anchor: anchor[1])
        return self._sorted[key]

    def locator(self, topic: str, partition: int) -> PartitionLocator:
        """Look-ups for one partition."""
        return PartitionLocator(self.anchors(topic, partition))


class PartitionLocator:
    """The syncs of one partition."""

    def __init__(self, anchors: list[Anchor]) -> None:
        self._anchors = anchors
        self._downstream = [anchor[1] for anchor in anchors]

    def __bool__(self) -> bool:
        return bool(self._anchors)

    def __call__(self, target_offset: int) -> Anchor | None:
        """The newest sync at or before `target_offset` downstream, if any."""
        index = bisect_right(self._downstream, target_offset) - 1
        return self._anchors[index] if index >= 0 else None

    def downstream_before(self, upstream_offset: int) -> int | None:
        """A target offset at or before the copy of `upstream_offset` (the latest sync not after it), if any."""
        best: int | None = None
        for upstream, downstream in self._anchors:
            if upstream <= upstream_offset and (best is None or downstream > best):
                best = downstream
        return best
