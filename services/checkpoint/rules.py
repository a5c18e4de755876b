"""MM2's checkpoint rules: which committed offsets become checkpoints, and under which topic name.

Invariants (MirrorCheckpointTask): a partition without a sync gets no checkpoint, nor one whose translation
is negative; a checkpoint is emitted only if it is the first for its group-partition, the upstream offset
rewound (the group was reset on the source), or the downstream offset advanced, so checkpoints never move a
group backwards on their own. Topics pass MM2's topic filter (not the full replication rule, as in MM2).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from shared.filters import TopicFilter
from shared.kafka.group_offsets import CommittedOffset
from shared.partition_key import PartitionKey
from shared.records import Checkpoint
from shared.replication_policy import ReplicationPolicy, checkpoint_topic_name

# (source topic, partition, upstream offset) -> downstream offset; None: no sync; -1: older than every sync.
Translate = Callable[[str, int, int], int | None]
# (source topic, partition, upstream offset) -> True if that translation is exact (later syncs cannot improve it)
IsExact = Callable[[str, int, int], bool]
_CACHE_MAX = 100_000


def is_more_recent(new: Checkpoint, last: Checkpoint | None) -> bool:
    """True if `new` must be emitted after `last` (MM2's checkpointIsMoreRecent)."""
    if last is None:
        return True
    if new.upstream_offset < last.upstream_offset:
        return True  # the group was rewound upstream: follow it, checkpoints may go down here
    return new.downstream_offset > last.downstream_offset


@dataclass(slots=True)
class GroupCheckpoints:
    """The outcome for one group: new checkpoints, and counts over partitions of replicated topics."""

    checkpoints: list[Checkpoint] = field(default_factory=list)
    partitions: int = 0
    misses: int = 0
    unchanged: int = 0
    inexact: int = 0  # translated, but not exactly: newer offset syncs may still improve it


class CheckpointRules:
    """The rules bound to one flow: its aliases, replication policy, topic filter and translation.

    Topic decisions are cached per name: a round looks at every partition of every group.
    """

    def __init__(
        self,
        source_alias: str,
        target_alias: str,
        policy: ReplicationPolicy,
        topic_filter: TopicFilter,
        translate: Translate,
        is_exact: IsExact | None = None,
    ) -> None:
        self.source_alias = source_alias
        self.target_alias = target_alias
        self.policy = policy
        self.topic_filter = topic_filter
        self.translate = translate
        self.is_exact = is_exact
        self._replicated: dict[str, bool] = {}
        self._remote: dict[str, str] = {}

    def replicated(self, topic: str) -> bool:
        """True if the topic filter accepts `topic`."""
        known = self._replicated.get(topic)
        if known is None:
            if len(self._replicated) > _CACHE_MAX:
                self._replicated.clear()
            known = self._replicated[topic] = self.topic_filter.should_replicate_topic(topic)
        return known

    def remote_topic(self, topic: str) -> str:
        """See `checkpoint_topic_name`."""
        name = self._remote.get(topic)
        if name is None:
            if len(self._remote) > _CACHE_MAX:
                self._remote.clear()
            name = self._remote[topic] = checkpoint_topic_name(self.policy, self.source_alias, self.target_alias, topic)
        return name

    def checkpoint(self, group: str, topic: str, partition: int, committed: CommittedOffset) -> Checkpoint | None:
        """The checkpoint for one committed offset, or None when there is no usable translation."""
        downstream = self.translate(topic, partition, committed.offset)
        if downstream is None or downstream < 0:
            return None
        return Checkpoint(
            group=group,
            topic=self.remote_topic(topic),
            partition=partition,
            upstream_offset=committed.offset,
            downstream_offset=downstream,
            metadata=committed.metadata,
        )

    def relevant(self, offsets: Mapping[PartitionKey, CommittedOffset]) -> bool:
        """True if the group has an offset on a topic the flow replicates (MM2 checkpoints only those groups)."""
        return any(self.replicated(topic) for topic, _ in offsets)

    def for_group(
        self,
        group: str,
        offsets: Mapping[PartitionKey, CommittedOffset],
        last: Mapping[PartitionKey, Checkpoint],
    ) -> GroupCheckpoints:
        """New checkpoints of `group` given its committed `offsets` and its `last` checkpoints (by remote name)."""
        outcome = GroupCheckpoints()
        for (topic, partition), committed in sorted(offsets.items()):
            if not self.replicated(topic):
                continue
            outcome.partitions += 1
            checkpoint = self.checkpoint(group, topic, partition, committed)
            # Asked first, even with no translation yet: the store keeps the runs an offset it was asked about
            # needs, so the offset syncs a catching-up mirror writes for it are still there at the next round.
            exact = self.is_exact is None or self.is_exact(topic, partition, committed.offset)
            if checkpoint is None:
                outcome.misses += 1
                continue
            if not exact:
                outcome.inexact += 1
            if is_more_recent(checkpoint, last.get((checkpoint.topic, partition))):
                outcome.checkpoints.append(checkpoint)
            else:
                outcome.unchanged += 1
        return outcome
