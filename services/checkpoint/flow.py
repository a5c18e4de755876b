"""One flow of the checkpoint service: offset syncs in, committed offsets translated, checkpoints out.

Order at start, as MM2: the checkpoints topic is read to its end (the last checkpoint of every group, so
nothing is ever emitted behind it), then the offset-syncs topic is read to its end, and only then does
translation start. Both topics are followed afterwards, so checkpoints that other instances write are
seen when a shard moves here.

In MM2's shape: the group feed (group_feed.py) owns where committed offsets come from and which groups changed;
the checkpointer (checkpointer.py) decides, without I/O, what each group's checkpoints are; this unit reads,
decides and writes in rounds timed by the lifecycle's periodic helper. A full round runs every
`emit.checkpoints.interval.seconds` (new offset syncs can make an idle group's checkpoint exact; nothing can change
an exact one until the group commits); a streamed commit is checkpointed within `strait.checkpoints.coalesce.ms`
by a changed round; group offsets are synced every `sync.group.offsets.interval.seconds`. Rounds take turns, never
overlap, and a stop lets the running one finish. Groups are split over instances by a ShardLease: by `stable_shard`
when polling, by their `__consumer_offsets` partition when streaming.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Sequence

from services.checkpoint.checkpoint_table import CheckpointTable
from services.checkpoint.checkpointer import Checkpointer, RoundPlan
from services.checkpoint.group_feed import FOLLOW_OPERATION, GroupFeed, GroupSource
from services.checkpoint.metrics import CheckpointMetrics
from services.checkpoint.offset_syncer import GroupOffsetSyncer
from services.checkpoint.rules import CheckpointRules
from services.checkpoint.settings import CheckpointSettings
from services.checkpoint.status import CheckpointStatus
from shared.control.status_reporter import State
from shared.error_state import FlowHealth
from shared.errors import StraitError
from shared.filters import DefaultGroupFilter
from shared.flow_context import FlowContext
from shared.flow_unit import FlowUnit
from shared.kafka.follow import FollowedRecord, TopicFollower
from shared.kafka.group_offsets import GroupAdmin, GroupOffsets
from shared.kafka.group_requests import GroupOffsetsClient
from shared.kafka.record_writer import LoopRecordWriter
from shared.kafka.topic_admin import TopicAdmin
from shared.offset_sync_store import OffsetSyncStore
from shared.records import Checkpoint
from shared.records.reading import decoded

SERVICE = "checkpoint"
MIN_ROUND_GAP_S = 0.05  # changed rounds never run back to back, even with a coalescing window of 0
INPUTS_CHECK_S = 0.5  # how often the inputs (stream, offset syncs, owned shards) are looked at; sooner on a lease move
NOT_READY_RETRY_S = 0.5  # a round that found nothing to translate yet looks again this soon
YIELD_EVERY_GROUPS = 50  # a round hands the event loop back this often (50 groups x 10 partitions: ~15 ms)
YIELD_EVERY_CHECKPOINTS = 2000


class FlowCheckpointer(FlowUnit):
    """One flow's checkpoints: a child unit of the checkpoint service (shared/flow_unit.py's lifecycle)."""

    def __init__(self, context: FlowContext, settings: CheckpointSettings, metrics: CheckpointMetrics) -> None:
        flow, topics = context.flow, context.topics
        publisher = context.publisher()
        super().__init__(
            service=SERVICE,
            context=context,
            lease=context.lease(SERVICE, instance_id=settings.instance_id, shards=settings.shards),
            publisher=publisher,
            status_interval_s=settings.status_interval_s,
        )
        self._settings = flow.settings
        self._metrics = metrics
        self._group_filter = DefaultGroupFilter(self._settings.groups, self._settings.groups_exclude)
        self.checkpoints_topic = topics.checkpoints_topic
        syncs = context.offset_syncs
        self.offset_syncs_topic, self._syncs_props = syncs.topic, syncs.consumer_props(flow)
        self.store: OffsetSyncStore | None = None
        self.table = CheckpointTable(self._group_filter.should_replicate_group)
        rules = CheckpointRules(
            flow.source, flow.target, topics.policy, topics.topic_filter, self._translate, self._is_exact
        )
        self._checkpointer = Checkpointer(rules, self.table.for_group)
        self._replication_factor = context.internal_replication_factor
        self._timeout_s = self._settings.admin_timeout_ms / 1000
        self._target_admin: TopicAdmin | None = None
        self.status = CheckpointStatus(self, settings.instance_id, publisher)
        self._checkpoints_follower = TopicFollower(
            flow.target_consumer_props(), self.checkpoints_topic, self.table.handle_records
        )
        self.feed = GroupFeed(
            flow,
            self._group_filter,
            self.lease,
            timeout_s=self._timeout_s,
            spawn=self.spawn,
            log=self.log,
            count_records=lambda kind, count: metrics.streamed_records.labels(flow.name, kind).inc(count),
        )
        self._rounds = asyncio.Lock()  # rounds take turns: each reads and updates the checkpoint table
        self._writer: LoopRecordWriter | None = None
        self.syncer: GroupOffsetSyncer | None = None
        self.relevant_groups: list[str] = []
        self.checkpoints_written = 0
        self.misses = 0
        self.invalid_syncs = 0
        self.last_round_ms: float | None = None
        self._sync_rewinds_seen = 0
        self.health = FlowHealth(self.log, "operation_failed", "recovered")
        self._full_round_ran = False
        self._sync_round_ran = False
        self._reflected_ms: dict[str, float] = {}  # group -> the commit (its time) its checkpoints now stand for

    @property
    def ready(self) -> bool:
        """Translating, or nothing to do (checkpoints turned off for the flow)."""
        return self.translating or not self._settings.emit_checkpoints_enabled

    @property
    def translating(self) -> bool:
        """True once the checkpoints and the offset syncs were read to their ends."""
        return self.store is not None and self.store.read_to_end

    @property
    def group_source(self) -> GroupSource | None:
        """Where the groups' committed offsets come from (None until open)."""
        return self.feed.source

    @property
    def streaming(self) -> bool:
        """Group offsets come from the source's `__consumer_offsets` stream (else from polling)."""
        return self.feed.streaming

    @property
    def active(self) -> bool:
        """Rounds may run: both topics read to their ends, shards owned, the group feed caught up, and the flow not
        failed over (a failed-over flow writes no checkpoint and moves no group)."""
        return self.translating and bool(self.lease.owned) and self.feed.ready and self.dr.may_run

    # -- lifecycle -------------------------------------------------------------------------------
    async def on_start(self) -> None:
        """Open and run in the background, unless checkpoints are turned off for the flow."""
        if not self._settings.emit_checkpoints_enabled:
            self.log.info("checkpoints_disabled", key="emit.checkpoints.enabled")
            return
        await super().on_start()

    async def open(self) -> None:
        """Checkpoints topic, lease and clients (the status publisher is already up)."""
        if self._target_admin is None:  # made once: the open is retried while the target is down
            self._target_admin = TopicAdmin(self.flow.target, self.flow.target_admin_props(), timeout_s=self._timeout_s)
        await asyncio.to_thread(
            self._target_admin.ensure_internal_topic,
            self.checkpoints_topic,
            replication_factor=self._replication_factor,
        )
        await self.lease.start()
        await self.feed.open()
        self._writer = LoopRecordWriter(self.flow.target, self.flow.target_producer_props())
        if self._settings.sync_group_offsets_enabled:
            self.syncer = GroupOffsetSyncer(
                self.flow.name,
                GroupAdmin.connect(self.flow.target, self.flow.target_admin_props(), timeout_s=self._timeout_s),
                GroupOffsetsClient(self.flow.target, self.flow.target_admin_props(), timeout_s=self._timeout_s),
                self.table,
                self._metrics,
            )
        self.log.info(
            "flow_opened",
            checkpoints_topic=self.checkpoints_topic,
            offset_syncs_topic=self.offset_syncs_topic,
            lease_topic=self.lease.topic,
            shards=self.lease.shards,
        )

    async def run_opened(self) -> None:
        """Follow the inputs and run the rounds until stopping, all in the unit's main task (a stop lets the
        running round finish); a follower's crash stops the unit."""
        self.spawn(self._checkpoints_follower.run(), "checkpoints")
        timers = [
            self.periodically(self._full_round_interval, self._full_round, "checkpoint-rounds"),
            self._changed_rounds(),
            self._follow_inputs(),
        ]
        if self.syncer is not None:
            timers.append(self.periodically(self._sync_round_interval, self._sync_round, "group-offset-sync"))
        await asyncio.gather(*timers)

    async def _follow_inputs(self) -> None:
        """Start reading offset syncs once the checkpoints are read; keep the group feed on the owned shards."""
        owned: frozenset[int] = frozenset()
        while not self.stopping:
            if self.store is None and self._checkpoints_follower.caught_up:
                self._start_reading_syncs()
            await self._noted(FOLLOW_OPERATION, await self.feed.check())
            if self.lease.owned != owned:
                owned = self.lease.owned
                self.feed.lease_moved()
                self._metrics.owned_shards.labels(self.flow.name).set(len(owned))
            self.feed.follow_owned()
            await self.wait_round(INPUTS_CHECK_S, lease_moved=self.lease.owned != owned)

    def _full_round_interval(self) -> float:
        return self._settings.emit_checkpoints_interval_s if self._full_round_ran else NOT_READY_RETRY_S

    async def _full_round(self) -> None:
        """Every group not translated for good; until rounds may run, nothing (looked at again soon)."""
        self._full_round_ran = self.active
        if self._full_round_ran:
            async with self._rounds:
                await self._guarded("checkpoint round", self._emit_round())

    async def _changed_rounds(self) -> None:
        """The groups that committed, gathered for the coalescing window, while the feed streams."""
        gap_s = max(self._settings.checkpoints_coalesce_ms / 1000, MIN_ROUND_GAP_S)
        next_round = 0.0
        while not self.stopping:
            if not await self.feed.wait_changes(self._stop_requested, INPUTS_CHECK_S):
                continue
            if not self.active:
                await self.wait_stop(NOT_READY_RETRY_S)
                continue
            if await self.wait_stop(next_round - time.monotonic()):
                return
            started = time.monotonic()
            async with self._rounds:
                await self._guarded("checkpoint round", self._emit_round(changed_only=True))
            next_round = started + gap_s

    def _sync_round_interval(self) -> float:
        return self._settings.sync_group_offsets_interval_s if self._sync_round_ran else NOT_READY_RETRY_S

    async def _sync_round(self) -> None:
        """Move idle target groups to their checkpoints (`sync.group.offsets.enabled`), once rounds may run."""
        assert self.syncer is not None
        self._sync_round_ran = self.active
        if not self._sync_round_ran:
            return
        groups = [group for group in self.relevant_groups if self.table.for_group(group)]
        async with self._rounds:
            await self._guarded("group offset sync", self._sync_groups(self.syncer, groups))

    async def _sync_groups(self, syncer: GroupOffsetSyncer, groups: list[str]) -> None:
        await self._noted("sync group offsets", await syncer.run_round(groups))

    async def release(self) -> None:
        """Stop reading group offsets, flush what is written (the followers were cancelled with the unit's tasks)."""
        await self.feed.close()
        if self.syncer is not None:
            await self.syncer.close()
        if self._writer is not None:
            await self._writer.close()

    async def publish_status(self, state: State | None = None) -> None:
        """Publish the flow's status now; never raises."""
        await self.status.reporter.publish(state)

    def _start_reading_syncs(self) -> None:
        # The last checkpoints are known, so (as MM2 when its checkpoint store loaded) the initial read may
        # keep every sync instead of only the latest: checkpoints never go behind what was emitted before.
        self.store = store = OffsetSyncStore(initialization_must_read_to_end=False)
        follower = TopicFollower(
            self._syncs_props, self.offset_syncs_topic, self._handle_syncs, on_caught_up=store.mark_read_to_end
        )
        self.spawn(follower.run(), "offset-syncs")

    def _handle_syncs(self, records: Sequence[FollowedRecord]) -> None:
        store = self.store
        assert store is not None
        for _ in decoded(
            records, lambda key, value, record: store.handle_record(key, value, record.headers), self._skip
        ):
            pass

    def _skip(self, record: FollowedRecord, reason: str) -> None:
        self.invalid_syncs += 1
        self.log.warning(
            "invalid_offset_sync_skipped", topic=self.offset_syncs_topic, offset=record.offset, error=reason
        )

    def _translate(self, topic: str, partition: int, offset: int) -> int | None:
        return None if self.store is None else self.store.translate_exact(topic, partition, offset)

    def _is_exact(self, topic: str, partition: int, offset: int) -> bool:
        return self.store is not None and self.store.is_exact(topic, partition, offset)

    # -- rounds ----------------------------------------------------------------------------------
    async def _emit_round(self, *, changed_only: bool = False) -> None:
        """Translate the groups' offsets and write the checkpoints that moved: every group (a full round), or only
        the groups that committed since the last round (streamed)."""
        started = time.monotonic()
        commits_ms = dict(self.feed.last_commit_ms())  # what this round's read covers at least
        rewound = self.store is not None and self.store.rewinds != self._sync_rewinds_seen
        if rewound:
            assert self.store is not None
            self._sync_rewinds_seen = self.store.rewinds
        offsets: dict[str, GroupOffsets]
        if changed_only:
            offsets = self.feed.read_changed(offset_syncs_rewound=rewound)
        else:
            offsets, failures = await self.feed.read_all(offset_syncs_rewound=rewound)
            await self._noted("read group offsets", list(failures.values()))
        read_ms = time.time() * 1000
        plan = RoundPlan()
        for count, (group, group_offsets) in enumerate(offsets.items(), start=1):
            if count % YIELD_EVERY_GROUPS == 0:
                await asyncio.sleep(0)
            self._checkpointer.add(plan, group, group_offsets)
        relevant = plan.relevant
        if not changed_only:
            relevant.extend(self.feed.left_out_relevant())
            self.relevant_groups = relevant
            self.feed.set_relevant(relevant)
        translated = time.monotonic()
        new, misses = plan.checkpoints, plan.misses
        if new:
            await self._write(new, read_ms, changed_only=changed_only)
        self.feed.translated(plan.unsettled, plan.final)  # written: full rounds can leave `final` out until it commits
        waiting = set(plan.unsettled)  # translated short of the commit: later offset syncs will move them
        for group in offsets:
            if group in commits_ms and group not in waiting:
                self._reflected_ms[group] = commits_ms[group]
        self.checkpoints_written += len(new)
        self.misses += misses
        name = self.flow.name
        self._metrics.checkpoints.labels(name).inc(len(new))
        self._metrics.misses.labels(name).inc(misses)
        if not changed_only:
            self._metrics.groups.labels(name).set(len(relevant))
            self._metrics.partitions.labels(name).set(self.table.partition_count(relevant))
        self._metrics.rounds.labels(name).inc()
        elapsed = time.monotonic() - started
        self._metrics.round_seconds.labels(name).observe(elapsed)
        self.last_round_ms = round(elapsed * 1000, 1)
        self.log.debug(
            "checkpoint_round",
            groups=len(relevant),
            translated=len(offsets),
            checkpoints=len(new),
            misses=misses,
            ms=round(elapsed * 1000, 1),
            write_ms=round((time.monotonic() - translated) * 1000, 1),
        )

    async def _write(self, new: list[Checkpoint], read_ms: float, *, changed_only: bool) -> None:
        """Write `new` and remember each as its group's last checkpoint, handing the loop back every
        `YIELD_EVERY_CHECKPOINTS` (a first round over 10,000 groups writes 100,000 of them)."""
        assert self._writer is not None
        records = []
        for count, checkpoint in enumerate(new, start=1):
            records.append((checkpoint.record_key(), checkpoint.record_value()))
            if count % YIELD_EVERY_CHECKPOINTS == 0:
                await asyncio.sleep(0)
        self.table.writing(records)
        try:
            log_offsets = await self._writer.write(self.checkpoints_topic, records, timeout_s=self._timeout_s)
        except BaseException:
            self.table.not_writing(records)
            raise
        acked_ms = time.time() * 1000
        committed_ms = self.feed.last_commit_ms()
        latency = self._metrics.latency_ms.labels(self.flow.name)
        commit_latency = self._metrics.commit_latency_ms.labels(self.flow.name)
        mm2_latencies = self._metrics.mm2_latencies
        for count, (checkpoint, log_offset) in enumerate(zip(new, log_offsets, strict=True), start=1):
            self.table.apply(checkpoint, log_offset)
            latency.observe(acked_ms - read_ms)
            if mm2_latencies is not None:
                mm2_latencies.observe(
                    self.flow.source, self.flow.target, checkpoint.group, checkpoint.topic, checkpoint.partition,
                    acked_ms - read_ms,
                )  # fmt: skip
            commit_ms = committed_ms.get(checkpoint.group)
            if changed_only and commit_ms is not None:
                commit_latency.observe(max(0.0, acked_ms - commit_ms))
            if count % YIELD_EVERY_CHECKPOINTS == 0:
                await asyncio.sleep(0)

    def group_rpo(self) -> dict[str, float]:
        """Groups whose checkpoints stand for an older commit than their last: group -> how much older (seconds).
        A failover now would move such a group to that older position (it reads again what it read since).
        Known only while the source's commits are streamed (a poll sees no commit times)."""
        behind: dict[str, float] = {}
        for group, commit_ms in self.feed.last_commit_ms().items():
            reflected = self._reflected_ms.get(group)
            if reflected is not None and commit_ms > reflected:
                behind[group] = round((commit_ms - reflected) / 1000, 3)
        self._metrics.groups_behind.labels(self.flow.name).set(len(behind))
        self._metrics.group_rpo_seconds.labels(self.flow.name).set(max(behind.values(), default=0.0))
        return behind

    # -- errors and waiting ----------------------------------------------------------------------
    async def _guarded(self, operation: str, work: Awaitable[None]) -> None:
        """Run one round; a StraitError fails the round and is noted like any other failure."""
        try:
            await work
        except StraitError as exc:
            await self._noted(operation, [exc])
        else:
            await self._noted(operation, [])

    async def _noted(self, operation: str, errors: Sequence[BaseException]) -> None:
        """Count `operation`'s failures and note them in the flow's health; when the flow starts failing or
        recovers, publish its status now."""
        if errors:
            self._metrics.errors.labels(self.flow.name, operation).inc(len(errors))
        changed = self.health.note(operation, errors)
        self.last_error = self.health.last_error
        if changed:
            await self.publish_status()
