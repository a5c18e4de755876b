"""A flow's offset syncs per source partition, as anchors: which sync places a target offset, and the reverse.

Unlike the translation store (`shared.offset_sync_store`), which keeps 64 syncs spaced for consumer offsets, the
verifier keeps every sync read: it places every target record, not one offset per group.

A target offset is placed only where the syncs say exactly where its source record lies: at a sync, between two
syncs of one run (both offsets advanced by the same amount and, for Strait's syncs, one writer's segment), or after
the newest sync. Between two syncs of different runs a jump happened somewhere (a restart, a replay, a gap) whose
own sync may never have been written (a task that failed before its first commit): there nothing is predicted,
and the verifier goes by the records alone.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable

from shared.errors import CodecError
from shared.kafka.follow import FollowedRecord
from shared.kafka.partition_reader import PartitionReader
from shared.records.offset_sync import OffsetSync, SyncSegment
from shared.verify.align import Anchor

_Stored = tuple[int, SyncSegment | None]  # upstream offset, the writer's segment (None: MM2's syncs)


class SyncIndex:
    """(topic, partition) -> syncs ordered by downstream offset (the newest sync wins a tie)."""

    def __init__(self) -> None:
        self._by_partition: dict[tuple[str, int], dict[int, _Stored]] = {}  # downstream -> newest sync there
        self._locators: dict[tuple[str, int], PartitionLocator] = {}
        self.skipped = 0  # records of the syncs topic that are not offset syncs

    @classmethod
    def of(cls, records: Iterable[FollowedRecord]) -> SyncIndex:
        """Index the records of an offset-syncs topic, in the order read."""
        index = cls()
        index.add_records(records)
        return index

    @classmethod
    def of_more(cls, index: SyncIndex, reader: PartitionReader, timeout_s: float) -> SyncIndex:
        """`index` with every sync `reader` (following the offset-syncs topic) finds up to the topic's present end:
        the syncs written before this moment all count, not only those its fetches happened to bring so far."""
        index.add_records(reader.read_to_current_end(timeout_s))
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
            self.add(sync, SyncSegment.from_headers(record.headers))

    def add(self, sync: OffsetSync, segment: SyncSegment | None = None) -> None:
        """One more sync, newer than every sync added before."""
        key = (sync.topic, sync.partition)
        self._by_partition.setdefault(key, {})[sync.downstream_offset] = (sync.upstream_offset, segment)
        self._locators.pop(key, None)

    def locator(self, topic: str, partition: int) -> PartitionLocator:
        """Look-ups for one partition (built once per batch of new syncs)."""
        key = (topic, partition)
        if key not in self._locators:
            stored = self._by_partition.get(key, {})
            self._locators[key] = PartitionLocator(
                [(up, down, segment) for down, (up, segment) in sorted(stored.items())]
            )
        return self._locators[key]


class PartitionLocator:
    """The syncs of one partition, by downstream offset."""

    def __init__(self, syncs: list[tuple[int, int, SyncSegment | None]]) -> None:
        self._anchors: list[Anchor] = [(up, down) for up, down, _ in syncs]
        self._segments = [segment for _, _, segment in syncs]
        self._downstream = [down for _, down, _ in syncs]

    @classmethod
    def of(cls, anchors: Iterable[Anchor]) -> PartitionLocator:
        """From bare (upstream, downstream) pairs, as MM2 writes them (no segments)."""
        return cls([(up, down, None) for up, down in sorted(anchors, key=lambda anchor: anchor[1])])

    def __bool__(self) -> bool:
        return bool(self._anchors)

    def __call__(self, target_offset: int) -> Anchor | None:
        """The sync that places `target_offset`, if one does exactly (see the module's docstring)."""
        index = bisect_right(self._downstream, target_offset) - 1
        if index < 0:
            return None
        anchor = self._anchors[index]
        if anchor[1] == target_offset or index + 1 == len(self._anchors) or self._one_run(index):
            return anchor
        return None

    def _one_run(self, index: int) -> bool:
        (up, down), (next_up, next_down) = self._anchors[index], self._anchors[index + 1]
        if next_up - up != next_down - down:
            return False
        segment, next_segment = self._segments[index], self._segments[index + 1]
        return segment is None or next_segment is None or segment == next_segment

    def downstream_before(self, upstream_offset: int) -> int | None:
        """A target offset at or before the copy of `upstream_offset` (the latest sync not after it), if any."""
        best: int | None = None
        for upstream, downstream in self._anchors:
            if upstream <= upstream_offset and (best is None or downstream > best):
                best = downstream
        return best
