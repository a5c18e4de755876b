"""Checkpoint rules: MM2's MirrorCheckpointTaskTest vectors (renaming, no sync, monotonic, restart) and exactness."""

from __future__ import annotations

from services.checkpoint.rules import CheckpointRules, is_more_recent
from shared.filters import DefaultTopicFilter
from shared.kafka.group_offsets import CommittedOffset
from shared.offset_sync_store import OffsetSyncStore
from shared.records import Checkpoint, OffsetSync
from shared.replication_policy import DefaultReplicationPolicy, checkpoint_topic_name

POLICY = DefaultReplicationPolicy()


def store_with(*syncs: tuple[str, int, int, int], must_read_to_end: bool = True) -> OffsetSyncStore:
    """A store that read (topic, partition, upstream, downstream) syncs, then its topic's end."""
    store = OffsetSyncStore(initialization_must_read_to_end=must_read_to_end)
    for topic, partition, upstream, downstream in syncs:
        store.handle(OffsetSync(topic, partition, upstream, downstream))
    store.mark_read_to_end()
    return store


def mm2_rules(store: OffsetSyncStore, topics: str = ".*") -> CheckpointRules:
    """The rules of flow source1->target2 with MM2's own translation."""
    return CheckpointRules("source1", "target2", POLICY, DefaultTopicFilter([topics], []), store.translate_downstream)


def exact_rules(store: OffsetSyncStore) -> CheckpointRules:
    """The rules of flow source1->target2 with Strait's exact translation, as the service runs them."""
    return CheckpointRules("source1", "target2", POLICY, DefaultTopicFilter(), store.translate_exact, store.is_exact)


def test_remote_names_and_fail_back_renaming() -> None:
    assert checkpoint_topic_name(POLICY, "source1", "target2", "topic3") == "source1.topic3"
    assert checkpoint_topic_name(POLICY, "source1", "target2", "target2.topic3") == "topic3"
    assert checkpoint_topic_name(POLICY, "source1", "target2", "source6.topic7") == "source1.source6.topic7"


def test_checkpoint_translates_and_renames_like_mm2() -> None:
    store = OffsetSyncStore()
    store.mark_read_to_end()
    store.handle(OffsetSync("topic1", 2, 3, 4))
    store.handle(OffsetSync("target2.topic5", 6, 7, 8))
    rules = mm2_rules(store)

    first = rules.checkpoint("group9", "topic1", 2, CommittedOffset(10))
    assert first == Checkpoint("group9", "source1.topic1", 2, 10, 5, "")
    failed_back = rules.checkpoint("group11", "target2.topic5", 6, CommittedOffset(12, "meta"))
    assert failed_back == Checkpoint("group11", "topic5", 6, 12, 9, "meta")
    at_sync = rules.checkpoint("group13", "target2.topic5", 6, CommittedOffset(7))
    assert at_sync == Checkpoint("group13", "topic5", 6, 7, 8, "")


def test_no_sync_means_no_checkpoint() -> None:
    rules = mm2_rules(store_with(("topic1", 0, 3, 4)))
    outcome = rules.for_group("group9", {("topic1", 1): CommittedOffset(10), ("topic1", 0): CommittedOffset(10)}, {})
    assert [(c.topic, c.partition) for c in outcome.checkpoints] == [("source1.topic1", 0)]
    assert outcome.misses == 1


def test_offsets_older_than_every_sync_get_no_checkpoint() -> None:
    rules = mm2_rules(store_with(("topic1", 0, 100, 200)))
    outcome = rules.for_group("g", {("topic1", 0): CommittedOffset(5)}, {})
    assert outcome.checkpoints == []
    assert outcome.misses == 1


def test_nothing_is_translated_before_the_syncs_were_read_to_the_end() -> None:
    store = OffsetSyncStore()
    store.handle(OffsetSync("topic1", 0, 3, 4))
    outcome = mm2_rules(store).for_group("g", {("topic1", 0): CommittedOffset(10)}, {})
    assert outcome.checkpoints == []


def test_topics_outside_the_filter_are_ignored_and_do_not_make_a_group_relevant() -> None:
    rules = mm2_rules(store_with(("orders", 0, 0, 0), ("audit", 0, 0, 0)), topics="orders")
    offsets = {("audit", 0): CommittedOffset(3)}
    assert not rules.relevant(offsets)
    outcome = rules.for_group("g", offsets, {})
    assert (outcome.checkpoints, outcome.partitions, outcome.misses) == ([], 0, 0)
    assert rules.relevant({**offsets, ("orders", 0): CommittedOffset(1)})


def test_checkpoints_stay_monotonic_when_the_store_forgets_a_sync() -> None:
    store = store_with()
    upstream, downstream = 11, 4
    for _ in range(2):
        store.handle(OffsetSync("topic1", 0, upstream, downstream))
        upstream, downstream = upstream + 1, downstream + 1
    group_offset, expected = upstream, downstream
    rules = mm2_rules(store)
    first = rules.for_group("g1", {("topic1", 0): CommittedOffset(group_offset)}, {})
    assert [c.downstream_offset for c in first.checkpoints] == [expected]
    last = {("source1.topic1", 0): first.checkpoints[0]}

    for _ in range(4):  # the store drops the sync used above, translation falls back further
        store.handle(OffsetSync("topic1", 0, upstream, downstream))
        upstream, downstream = upstream + 1, downstream + 1
    store.handle(OffsetSync("topic1", 0, upstream, downstream))
    assert store.translate_downstream("topic1", 0, group_offset) != expected
    again = rules.for_group("g1", {("topic1", 0): CommittedOffset(group_offset)}, last)
    assert again.checkpoints == []
    assert again.unchanged == 1

    rewound = rules.for_group("g1", {("topic1", 0): CommittedOffset(group_offset - 1)}, last)
    assert len(rewound.checkpoints) == 1  # the group was reset upstream: follow it


def test_restart_never_emits_behind_the_checkpoints_already_written() -> None:
    before = store_with(*(("t1", 0, i, i) for i in range(100, 301, 100)), must_read_to_end=False)
    first = mm2_rules(before).for_group("group1", {("t1", 0): CommittedOffset(250)}, {})
    assert first.checkpoints == [Checkpoint("group1", "source1.t1", 0, 250, 201, "")]
    last = {("source1.t1", 0): first.checkpoints[0]}

    after = store_with(*(("t1", 0, i, i) for i in range(175, 476, 100)), must_read_to_end=False)
    rules = mm2_rules(after)
    assert after.translate_downstream("t1", 0, 250) == 176
    assert rules.for_group("group1", {("t1", 0): CommittedOffset(250)}, last).checkpoints == []
    assert rules.for_group("group1", {("t1", 0): CommittedOffset(370)}, last).checkpoints == []
    emitted = rules.for_group("group1", {("t1", 0): CommittedOffset(400)}, last).checkpoints
    assert emitted == [Checkpoint("group1", "source1.t1", 0, 400, 376, "")]


def test_is_more_recent_rules() -> None:
    last = Checkpoint("g", "A.t", 0, 100, 50)
    assert is_more_recent(Checkpoint("g", "A.t", 0, 100, 50), None)
    assert not is_more_recent(Checkpoint("g", "A.t", 0, 100, 50), last)  # repeated
    assert not is_more_recent(Checkpoint("g", "A.t", 0, 120, 40), last)  # would move the group back
    assert is_more_recent(Checkpoint("g", "A.t", 0, 120, 51), last)  # downstream advanced
    assert is_more_recent(Checkpoint("g", "A.t", 0, 90, 45), last)  # upstream rewind


def test_exact_translation_points_at_the_next_unconsumed_record_between_syncs() -> None:
    # MM2's sync rule with offset.lag.max=100 on a gap-free topic mirrored into an empty remote topic.
    store = store_with(*(("orders", 0, up, up + 1000) for up in (0, 101, 202, 249)), must_read_to_end=False)
    outcome = exact_rules(store).for_group("g", {("orders", 0): CommittedOffset(150)}, {})
    assert [c.downstream_offset for c in outcome.checkpoints] == [1150]
    mm2 = mm2_rules(store).for_group("g", {("orders", 0): CommittedOffset(150)}, {})
    assert [c.downstream_offset for c in mm2.checkpoints] == [1102]  # re-delivers 48 records on failover


def test_exact_translation_falls_back_to_mm2_across_a_gap() -> None:
    # upstream 50..59 were compacted away: the second sync starts a new run, no exact mapping in between
    store = store_with(("orders", 0, 0, 0), ("orders", 0, 60, 50), ("orders", 0, 80, 70), must_read_to_end=False)
    rules = exact_rules(store)
    assert rules.checkpoint("g", "orders", 0, CommittedOffset(30)) == Checkpoint("g", "source1.orders", 0, 30, 1)
    assert rules.checkpoint("g", "orders", 0, CommittedOffset(70)) == Checkpoint("g", "source1.orders", 0, 70, 60)


def test_a_translation_outside_every_exact_run_is_counted_as_inexact() -> None:
    # syncs 0..249 form one run; 300 lies beyond the newest sync and 30 across a gap after a compaction
    store = store_with(*(("orders", 0, up, up + 1000) for up in (0, 101, 202, 249)), must_read_to_end=False)
    store.handle(OffsetSync("gapped", 0, 0, 0))
    store.handle(OffsetSync("gapped", 0, 60, 50))
    rules = exact_rules(store)
    inside = rules.for_group("g", {("orders", 0): CommittedOffset(150)}, {})
    assert (inside.inexact, inside.misses) == (0, 0)
    beyond = rules.for_group("g", {("orders", 0): CommittedOffset(300), ("gapped", 0): CommittedOffset(30)}, {})
    assert (beyond.inexact, beyond.misses, len(beyond.checkpoints)) == (2, 0, 2)
    unknown = rules.for_group("g", {("other", 0): CommittedOffset(5)}, {})
    assert (unknown.inexact, unknown.misses) == (0, 1)
