"""The source's consumer-group commits as a stream: `__consumer_offsets` followed instead of asking every group.

A group's records all live in one partition of `__consumer_offsets` (`group_partition`), so instances split the
work by those partitions: an instance follows the partitions whose shard (`partition % shards`) its lease owns and
knows the latest committed offsets of exactly the groups in them. Each commit marks its group changed, so a
checkpoint can follow within a coalescing window instead of a polling interval. Offset tombstones forget a
partition, a group-metadata tombstone (the group was deleted, or expired) forgets the group, and groups the filter
leaves out are never kept. faust-streaming was the first choice here and does not fit: it cannot read
read_committed, coordinates its own consumer group on the cluster it reads (the user's source), and cannot follow
partitions that our lease assigns; so aiokafka follows them directly (shared/kafka/follow.py).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence

import structlog

from shared.config import FlowConfig
from shared.errors import CodecError, KafkaOperationError
from shared.kafka.follow import FollowedRecord, PartitionsFollower
from shared.kafka.group_offsets import CommittedOffset, GroupOffsets
from shared.records.consumer_offsets import (
    GROUP_METADATA_KEY_TYPE,
    OtherKey,
    decode_key,
    decode_offset_commit_value,
    group_partition,
)

CONSUMER_OFFSETS_TOPIC = "__consumer_offsets"
_log = structlog.get_logger("checkpoint")


class CommittedOffsetsTable:
    """group -> (topic, partition) -> latest committed offset, from `__consumer_offsets` records (pure logic)."""

    def __init__(self, wanted: Callable[[str], bool]) -> None:
        self._wanted = wanted
        self._groups: dict[str, GroupOffsets] = {}
        self._changed: set[str] = set()
        self.commits = 0
        self.other_records = 0
        self.invalid_records = 0
        self.last_commit_ms: dict[str, int] = {}

    def handle(self, records: Sequence[FollowedRecord]) -> None:
        """Apply records of `__consumer_offsets` in log order."""
        for record in records:
            try:
                self._apply(record)
            except CodecError as exc:
                self.invalid_records += 1
                _log.warning("invalid_consumer_offsets_record", offset=record.offset, error=str(exc))

    def _apply(self, record: FollowedRecord) -> None:
        if record.key is None:
            raise CodecError("__consumer_offsets record without a key")
        key = decode_key(record.key)
        if isinstance(key, OtherKey):
            if key.key_type == GROUP_METADATA_KEY_TYPE and record.value is None and key.group is not None:
                self.forget(key.group)  # the group is gone: deleted, or expired with its offsets
            else:
                self.other_records += 1
            return
        if not self._wanted(key.group):
            return
        partition = (key.topic, key.partition)
        if record.value is None:
            offsets = self._groups.get(key.group)
            if offsets is not None and offsets.pop(partition, None) is not None:
                if offsets:
                    self._changed.add(key.group)
                else:
                    self.forget(key.group)
            return
        value = decode_offset_commit_value(record.value)
        self._groups.setdefault(key.group, {})[partition] = CommittedOffset(value.offset, value.metadata)
        self.last_commit_ms[key.group] = value.commit_timestamp_ms
        self._changed.add(key.group)
        self.commits += 1

    def forget(self, group: str) -> None:
        """Drop everything known about `group`."""
        self._groups.pop(group, None)
        self.last_commit_ms.pop(group, None)
        self._changed.discard(group)

    def forget_where(self, gone: Callable[[str], bool]) -> None:
        """Drop the groups for which `gone` is true (their partitions are followed elsewhere now)."""
        for group in [group for group in self._groups if gone(group)]:
            self.forget(group)

    def offsets(self, groups: Sequence[str] | None = None) -> dict[str, GroupOffsets]:
        """Committed offsets of `groups` (default: every group known), copied."""
        names = self._groups if groups is None else [group for group in groups if group in self._groups]
        return {group: dict(self._groups[group]) for group in names}

    def drain_changed(self) -> list[str]:
        """Groups with commits since the last call."""
        changed, self._changed = sorted(self._changed), set()
        return changed

    def pending_changes(self) -> frozenset[str]:
        """Groups with commits not yet drained (without draining them)."""
        return frozenset(self._changed)

    def groups(self) -> list[str]:
        """Every group known."""
        return list(self._groups)

    def __contains__(self, group: object) -> bool:
        return group in self._groups

    @property
    def has_changes(self) -> bool:
        return bool(self._changed)

    def __len__(self) -> int:
        return len(self._groups)


SETTLE_S = 5.0
RECORDS_PER_BATCH = 500  # decoded in one piece: about 35 us each, so a batch holds the loop under 20 ms
MAX_SETTLE_S = 60.0  # a group whose partitions have no offset sync yet is looked at again this long after its commit


class StreamedSourceGroups:
    """One flow's source groups from the commit stream, for the partitions this instance's lease owns.

    A commit is often translated before the offset syncs reach its position (data-mirror writes them as it
    commits its own progress), which gives MM2's conservative answer, or none yet when nothing was copied past
    the group's position. Such a group stays *settling*: it is translated again at every changed round for
    `SETTLE_S` after each round that could not translate it exactly, and at most `MAX_SETTLE_S` after its last
    commit, so a group that commits and pauses is exact within about a second of its records being copied, not at
    the next full round. A group translated exactly is looked at again only when it commits (or at a full round).
    """

    def __init__(
        self,
        flow: FlowConfig,
        wanted: Callable[[str], bool],
        partitions: int,
        owned_shards: Callable[[], frozenset[int]],
        shards: int,
        *,
        count_records: Callable[[str, int], None] = lambda _kind, _count: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._clock = clock
        self.partitions = partitions
        self._owned_shards = owned_shards
        self._shards = shards
        self._count_records = count_records
        self.table = CommittedOffsetsTable(wanted)
        self._settling: dict[str, float] = {}  # group -> monotonic time it stops settling
        self._final: dict[str, bool] = {}  # group -> relevant: translated for good until its next commit
        self._committed_at: dict[str, float] = {}  # group -> monotonic time its last commit was seen
        self.changed = asyncio.Event()
        self.relevant: list[str] = []
        self.follower = PartitionsFollower(
            flow.source_consumer_props(), CONSUMER_OFFSETS_TOPIC, self._handle, max_records=RECORDS_PER_BATCH
        )

    @property
    def caught_up(self) -> bool:
        """Every followed partition was read to the end it had when it was taken on."""
        return self.follower.caught_up

    def owns(self, group: str) -> bool:
        """The group's commits are in a partition this instance follows."""
        return group_partition(group, self.partitions) % self._shards in self._owned_shards()

    def follow_owned(self) -> None:
        """Follow the partitions of the owned shards; forget the groups of partitions given up."""
        owned = self._owned_shards()
        wanted = frozenset(p for p in range(self.partitions) if p % self._shards in owned)
        if wanted != self.follower.partitions:
            self.table.forget_where(lambda group: group_partition(group, self.partitions) not in wanted)
            self.follower.follow(wanted)

    def _handle(self, _partition: int, records: Sequence[FollowedRecord]) -> None:
        table = self.table
        before = (table.commits, table.other_records, table.invalid_records)
        table.handle(records)
        after = (table.commits, table.other_records, table.invalid_records)
        for kind, old, new in zip(("commit", "other", "invalid"), before, after, strict=True):
            if new > old:
                self._count_records(kind, new - old)
        if table.has_changes:
            self.changed.set()

    async def read(self) -> tuple[dict[str, GroupOffsets], Mapping[str, KafkaOperationError]]:
        """Committed offsets of every group known here that a full round may still translate differently: all but
        the groups translated for good (exactly, or not relevant) that did not commit since."""
        table = self.table
        committed = table.pending_changes()
        self._final = {g: relevant for g, relevant in self._final.items() if g in table and g not in committed}
        return table.offsets([group for group in table.groups() if group not in self._final]), {}

    def translated_for_good(self, groups: Mapping[str, bool]) -> None:
        """`groups` (group -> relevant) were translated exactly at their current commits, or have no replicated
        partition: until they commit again, later offset syncs cannot change their checkpoints, so full rounds
        leave them out (an idle group costs nothing then; MM2 translates every group every interval), and a group
        that was settling stops: nothing later can improve its checkpoints."""
        self._final.update(groups)
        for group in groups:
            self._settling.pop(group, None)

    def relevant_translated_for_good(self) -> list[str]:
        """Relevant groups left out of full rounds (translated for good)."""
        table = self.table
        return [group for group, relevant in self._final.items() if relevant and group in table]

    def translate_all_again(self) -> None:
        """Offset syncs rewound (a recreated or re-copied topic): every group is translated at the next full round."""
        self._final.clear()

    @property
    def settling(self) -> bool:
        """Some group committed within `SETTLE_S`: changed rounds should keep running."""
        return bool(self._settling)

    def read_changed(self) -> dict[str, GroupOffsets]:
        """Committed offsets of the groups that committed since the last call or are still settling."""
        self.changed.clear()
        now = self._clock()
        committed = self.table.drain_changed()
        for group in committed:
            self._committed_at[group] = now
            self._final.pop(group, None)
        self._settling = {group: until for group, until in self._settling.items() if until > now}
        self._committed_at = {g: at for g, at in self._committed_at.items() if now < at + MAX_SETTLE_S}
        return self.table.offsets(sorted(set(committed) | self._settling.keys()))

    def keep_settling(self, groups: Sequence[str]) -> None:
        """`groups` were not all translated exactly this round: look again soon, within `MAX_SETTLE_S` of their
        last commit."""
        now = self._clock()
        for group in groups:
            committed = self._committed_at.get(group)
            if committed is not None and now < committed + MAX_SETTLE_S:
                self._settling[group] = max(self._settling.get(group, 0.0), now + SETTLE_S)

    async def close(self) -> None:
        """Nothing to close: the follower runs as a task of the flow unit, cancelled with it."""
