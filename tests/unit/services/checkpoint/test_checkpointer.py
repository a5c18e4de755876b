"""The checkpointer's round plan: which groups are relevant, settled or still waiting for offset syncs."""

from __future__ import annotations

from services.checkpoint.checkpointer import Checkpointer, RoundPlan
from services.checkpoint.rules import CheckpointRules
from shared.filters import DefaultTopicFilter
from shared.kafka.group_offsets import CommittedOffset
from shared.offset_sync_store import OffsetSyncStore
from shared.records import Checkpoint, OffsetSync
from shared.replication_policy import DefaultReplicationPolicy


def checkpointer(store: OffsetSyncStore, last: dict[str, dict[tuple[str, int], Checkpoint]]) -> Checkpointer:
    topic_filter = DefaultTopicFilter(["orders.*"], [])
    rules = CheckpointRules("A", "B", DefaultReplicationPolicy(), topic_filter, store.translate_exact, store.is_exact)
    return Checkpointer(rules, lambda group: last.get(group, {}))


def test_a_round_sorts_groups_into_written_settled_unsettled_and_irrelevant() -> None:
    store = OffsetSyncStore()
    store.handle(OffsetSync("orders", 0, 100, 1100))
    store.mark_read_to_end()
    last = {"known": {("A.orders", 0): Checkpoint("known", "A.orders", 0, 100, 1100, "")}}
    plan = RoundPlan()
    check = checkpointer(store, last)

    check.add(plan, "exact", {("orders", 0): CommittedOffset(100)})  # at the sync: exact, written
    check.add(plan, "known", {("orders", 0): CommittedOffset(100)})  # exact, nothing new to write
    check.add(plan, "ahead", {("orders", 0): CommittedOffset(150)})  # past the last sync: inexact
    check.add(plan, "unsynced", {("orders", 1): CommittedOffset(5)})  # no sync for the partition: a miss
    check.add(plan, "other", {("payments", 0): CommittedOffset(7)})  # no replicated topic

    assert [(c.group, c.upstream_offset, c.downstream_offset) for c in plan.checkpoints] == [
        ("exact", 100, 1100),
        ("ahead", 150, 1101),
    ]
    assert plan.relevant == ["exact", "known", "ahead", "unsynced"]
    assert plan.unsettled == ["ahead", "unsynced"]
    assert plan.final == {"exact": True, "known": True, "other": False}
    assert plan.misses == 1
