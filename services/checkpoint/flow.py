"""One flow of the checkpoint service: offset syncs in, committed offsets translated, checkpoints out.

Order at start, as MM2: the checkpoints topic is read to its end (the last checkpoint of every group, so
nothing is ever emitted behind it), then the offset-syncs topic is read to its end, and only then does
translation start. Both topics are followed afterwards, so checkpoints that other instances write are
seen when a shard moves here.

The groups' committed offsets come from the source's `__consumer_offsets`, followed as a stream (commit_stream.py):
a commit is checkpointed within `strait.checkpoints.coalesce.ms`, and every `emit.checkpoints.interval.seconds` the
groups not yet translated exactly are translated again (new offset syncs can make an idle group's checkpoint exact;
nothing can change an exact one until the group commits). Where that topic
cannot be read, checkpoint polls every group's offsets each interval, as MM2 does (`strait.checkpoints.source`:
auto falls back with a warning, stream insists, poll never streams). Groups are split over instances by a
ShardLease: by `stable_shard` when polling, by their `__consumer_offsets` partition when streaming.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Sequence

from services.checkpoint.checkpoint_table import CheckpointTable
from services.checkpoint.commit_stream import CONSUMER_OFFSETS_TOPIC, StreamedSourceGroups
from services.checkpoint.metrics import CheckpointMetrics
from services.checkpoint.offset_syncer import GroupOffsetSyncer
from services.checkpoint.rules import CheckpointRules
from services.checkpoint.settings import CheckpointSettings
from services.checkpoint.source_groups import SourceGroups
from services.checkpoint.status import CheckpointStatus
from shared.cluster_watch import ClusterWatch
from shared.config import FlowConfig
from shared.control import ControlPublisher
from shared.control.status_reporter import State
from shared.errors import AuthorizationError, StraitError
from shared.filters import DefaultGroupFilter
from shared.flow_topics import FlowTopics, offset_syncs_place
from shared.flow_unit import FlowUnit
from shared.kafka.follow import FollowedRecord, TopicFollower
from shared.kafka.group_offsets import GroupAdmin, GroupOffsets
from shared.kafka.group_requests import GroupOffsetsClient
from shared.kafka.record_writer import LoopRecordWriter
from shared.kafka.topic_admin import TopicAdmin
from shared.lease import ShardLease
from shared.offset_sync_store import OffsetSyncStore
from shared.records import Checkpoint
from shared.records.reading import decoded

SERVICE = "checkpoint"
GroupSource = SourceGroups | StreamedSourceGroups
MIN_ROUND_GAP_S = 0.05  # changed rounds never run back to back, even with a coalescing window of 0
YIELD_EVERY_GROUPS = 50  # a round hands the event loop back this often (50 groups x 10 partitions: ~15 ms)
YIELD_EVERY_CHECKPOINTS = 2000


class FlowCheckpointer(FlowUnit):
    """One flow's checkpoints: a child unit of the checkpoint service (shared/flow_unit.py's lifecycle)."""

    def __init__(self, flow: FlowConfig, settings: CheckpointSettings, metrics: CheckpointMetrics) -> None:
        topics = FlowTopics.for_flow(flow)
        replication_factor = flow.settings.checkpoints_topic_replication_factor
        publisher = ControlPublisher(flow.target_producer_props(), replication_factor=replication_factor)
        lease = ShardLease(
            flow.target_consumer_props(),
            group_id=topics.lease_group(SERVICE),
            topic=topics.lease_topic(SERVICE),
            shards=settings.shards,
            replication_factor=replication_factor,
            instance_id=settings.instance_id,
        )
        super().__init__(
            service=SERVICE,
            flow=flow,
            lease=lease,
            publisher=publisher,
            watch=ClusterWatch.for_flows([flow]),
            status_interval_s=settings.status_interval_s,
        )
        self._settings = flow.settings
        self._metrics = metrics
        self._group_filter = DefaultGroupFilter(self._settings.groups, self._settings.groups_exclude)
        self.checkpoints_topic = topics.policy.checkpoints_topic(flow.source)
        syncs = offset_syncs_place(flow)
        self.offset_syncs_topic, self._syncs_props = syncs.topic, syncs.consumer_props(flow)
        self.store: OffsetSyncStore | None = None
        self.table = CheckpointTable(self._group_filter.should_replicate_group)
        self._rules = CheckpointRules(
            flow.source, flow.target, topics.policy, topics.topic_filter, self._translate, self._is_exact
        )
        self._replication_factor = replication_factor
        self._timeout_s = self._settings.admin_timeout_ms / 1000
        self._target_admin: TopicAdmin | None = None
        self._source_admin: TopicAdmin | None = None
        self.status = CheckpointStatus(self, settings.instance_id, publisher)
        self._checkpoints_follower = TopicFollower(
            flow.target_consumer_props(), self.checkpoints_topic, self.table.handle_records
        )
        self._source: GroupSource | None = None
        self._stream_task: asyncio.Task[None] | None = None
        self._stream_probe_at: float | None = None  # when to look for `__consumer_offsets` again (not there yet)
        self._writer: LoopRecordWriter | None = None
        self.syncer: GroupOffsetSyncer | None = None
        self.relevant_groups: list[str] = []
        self.checkpoints_written = 0
        self.misses = 0
        self.invalid_syncs = 0
        self.last_round_ms: float | None = None
        self._sync_rewinds_seen = 0
        self._errors: dict[str, str] = {}

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
        return self._source

    @property
    def streaming(self) -> bool:
        """Group offsets come from the source's `__consumer_offsets` stream (else from polling)."""
        return isinstance(self._source, StreamedSourceGroups)

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
        self._source = await self._open_source()
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
        """Translate and emit while this instance owns shards, until stopping; a follower's crash stops it."""
        self.spawn(self._checkpoints_follower.run(), "checkpoints")
        next_emit = next_sync = next_changed = 0.0
        coalesce_s = self._settings.checkpoints_coalesce_ms / 1000
        owned: frozenset[int] = frozenset()
        while not self.stopping:
            error_before = self.last_error
            if self.store is None and self._checkpoints_follower.caught_up:
                self._start_reading_syncs()
            await self._check_stream()
            source = self._source
            if self.lease.owned != owned:
                owned = self.lease.owned
                if isinstance(source, SourceGroups):
                    source.refresh_soon()  # newly owned groups are only found by a full listing
                self._metrics.owned_shards.labels(self.flow.name).set(len(owned))
            if isinstance(source, StreamedSourceGroups):
                source.follow_owned()
            # A stream read halfway holds older commits: checkpoints wait until it caught up, never going back.
            stream = source if isinstance(source, StreamedSourceGroups) else None
            active = self.translating and bool(owned) and (stream is None or stream.caught_up)
            if active and time.monotonic() >= next_emit:
                started = time.monotonic()
                await self._guarded("checkpoint round", self._emit_round())
                next_emit = started + self._settings.emit_checkpoints_interval_s
            elif (
                active
                and stream is not None
                and (stream.changed.is_set() or stream.settling)
                and (time.monotonic() >= next_changed)
            ):
                started = time.monotonic()
                await self._guarded("checkpoint round", self._emit_round(changed_only=True))
                next_changed = started + max(coalesce_s, MIN_ROUND_GAP_S)
            if active and self.syncer is not None and time.monotonic() >= next_sync:
                started = time.monotonic()
                await self._guarded("group offset sync", self._sync_round())
                next_sync = started + self._settings.sync_group_offsets_interval_s
            if self.last_error != error_before:
                await self.publish_status()  # failing or recovered: say so now
            wake = [time.monotonic() + self._status_interval_s]
            commits: asyncio.Event | None = None
            if active:
                wake.append(next_emit)
                if self.syncer is not None:
                    wake.append(next_sync)
                if stream is not None:
                    if stream.changed.is_set() or stream.settling:
                        wake.append(next_changed)  # gather a group's commits for the coalescing window
                    else:
                        commits = stream.changed
            else:
                wake.append(time.monotonic() + 0.5)  # until the topics are read: look again soon
            await self.wait_round(min(wake) - time.monotonic(), lease_moved=self.lease.owned != owned, also=commits)

    # -- where group offsets come from ----------------------------------------------------------
    async def _open_source(self) -> GroupSource:
        """The commit stream unless the flow says poll or the source's `__consumer_offsets` cannot be read."""
        mode = self._settings.checkpoints_source
        if mode != "poll":
            partitions = await self._consumer_offsets_partitions()
            if partitions is not None:
                return self._streamed_source(partitions)
        return self._polling_source()

    async def _consumer_offsets_partitions(self) -> int | None:
        """The partition count of the source's `__consumer_offsets`; None to poll instead (said in the log)."""
        if self._source_admin is None:
            self._source_admin = TopicAdmin(self.flow.source, self.flow.source_admin_props(), timeout_s=self._timeout_s)
        try:
            partitions = await asyncio.to_thread(self._source_admin.partition_count, CONSUMER_OFFSETS_TOPIC)
        except AuthorizationError as exc:
            if self._settings.checkpoints_source == "stream":
                raise  # the flow fails to open, saying what is not allowed, until it is
            self._warn_polling(exc, "DESCRIBE")
            return None
        if partitions is None:  # no group ever committed on the source: nothing to stream yet
            self.log.info("consumer_offsets_missing_polling_until_it_exists", cluster=self.flow.source)
            self._stream_probe_at = time.monotonic() + max(1, self._settings.refresh_groups_interval_s)
        else:
            self._stream_probe_at = None
        return partitions

    def _polling_source(self) -> SourceGroups:
        """MM2's way: list the groups and fetch their offsets every round (groups sharded by `stable_shard`)."""
        return SourceGroups(self.flow, self._group_filter, self.lease.owns, timeout_s=self._timeout_s)

    def _streamed_source(self, partitions: int) -> StreamedSourceGroups:
        source = StreamedSourceGroups(
            self.flow,
            self._group_filter.should_replicate_group,
            partitions,
            lambda: self.lease.owned,
            self.lease.shards,
            count_records=lambda kind, count: self._metrics.streamed_records.labels(self.flow.name, kind).inc(count),
        )
        self.log.info("checkpoint_source", source="stream", topic=CONSUMER_OFFSETS_TOPIC, partitions=partitions)
        return source

    async def _check_stream(self) -> None:
        """Start the stream's follower; fall back to polling when reading is refused (auto); start streaming once
        `__consumer_offsets` exists; report the stream's failures as the flow's."""
        source = self._source
        if isinstance(source, StreamedSourceGroups):
            if self._stream_task is None:
                self._stream_task = self.spawn(source.follower.run(), "consumer-offsets")
            error = source.follower.last_error
            if isinstance(error, AuthorizationError) and self._settings.checkpoints_source == "auto":
                self._stream_task.cancel()
                self._stream_task = None
                self._warn_polling(error, "READ")
                self._source = self._polling_source()
                self._note_errors(f"follow {CONSUMER_OFFSETS_TOPIC}", [])
            else:
                self._note_errors(f"follow {CONSUMER_OFFSETS_TOPIC}", [error] if error is not None else [])
        elif self._stream_probe_at is not None and time.monotonic() >= self._stream_probe_at:
            partitions = await self._consumer_offsets_partitions()
            if partitions is not None and isinstance(source, SourceGroups):
                await source.close()
                self._source = self._streamed_source(partitions)

    def _warn_polling(self, error: StraitError, permission: str) -> None:
        self.log.warning(
            "checkpoint_polling_group_offsets",
            reason=f"cannot read {CONSUMER_OFFSETS_TOPIC} on cluster {self.flow.source}: streamed checkpoints need "
            f"DESCRIBE and READ on topic {CONSUMER_OFFSETS_TOPIC}; missing: {permission}",
            error=str(error),
            interval_s=self._settings.emit_checkpoints_interval_s,
        )

    async def release(self) -> None:
        """Stop reading group offsets, flush what is written (the followers were cancelled with the unit's tasks)."""
        if self._source is not None:
            await self._source.close()
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
        source = self._source
        assert source is not None
        started = time.monotonic()
        streamed = source if isinstance(source, StreamedSourceGroups) else None
        if streamed is not None and self.store is not None and self.store.rewinds != self._sync_rewinds_seen:
            self._sync_rewinds_seen = self.store.rewinds
            streamed.translate_all_again()
        offsets: dict[str, GroupOffsets]
        if changed_only:
            assert streamed is not None
            offsets = streamed.read_changed()
        else:
            offsets, failures = await source.read()
            self._note_errors("read group offsets", list(failures.values()))
            if streamed is not None:
                streamed.read_changed()  # this round covers them
        read_ms = time.time() * 1000
        new = []
        misses = 0
        relevant = []
        unsettled = []  # groups whose translation later offset syncs may still improve
        final: dict[str, bool] = {}  # groups whose checkpoints no later offset sync changes (group -> relevant)
        for count, (group, group_offsets) in enumerate(offsets.items(), start=1):
            if count % YIELD_EVERY_GROUPS == 0:
                await asyncio.sleep(0)
            if not self._rules.relevant(group_offsets):
                final[group] = False
                continue
            relevant.append(group)
            outcome = self._rules.for_group(group, group_offsets, self.table.for_group(group))
            new.extend(outcome.checkpoints)
            misses += outcome.misses
            if outcome.misses or outcome.inexact:
                unsettled.append(group)
            else:
                final[group] = True
        if streamed is not None:
            streamed.keep_settling(unsettled)
            if not changed_only:
                relevant.extend(streamed.relevant_translated_for_good())
        if not changed_only:
            self.relevant_groups = source.relevant = relevant
        translated = time.monotonic()
        if new:
            await self._write(new, read_ms, source, changed_only=changed_only)
        if streamed is not None:
            streamed.translated_for_good(final)  # written: full rounds can leave them out until they commit
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

    async def _write(self, new: list[Checkpoint], read_ms: float, source: GroupSource, *, changed_only: bool) -> None:
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
        committed_ms = source.table.last_commit_ms if isinstance(source, StreamedSourceGroups) else {}
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

    async def _sync_round(self) -> None:
        assert self.syncer is not None
        groups = [group for group in self.relevant_groups if self.table.for_group(group)]
        self._note_errors("sync group offsets", await self.syncer.run_round(groups))

    # -- errors and waiting ----------------------------------------------------------------------
    async def _guarded(self, operation: str, work: Awaitable[None]) -> None:
        """Run one round; a StraitError fails the round and is noted like any other failure."""
        try:
            await work
        except StraitError as exc:
            self._note_errors(operation, [exc])
        else:
            self._note_errors(operation, [])

    def _note_errors(self, operation: str, errors: Sequence[BaseException]) -> None:
        """Count failures; log when an operation starts failing differently or recovers, never per group."""
        previous = self._errors.get(operation)
        if not errors:
            if previous is not None:
                del self._errors[operation]
                self.log.info("recovered", operation=operation)
        else:
            self._metrics.errors.labels(self.flow.name, operation).inc(len(errors))
            first = str(errors[0])
            if first != previous:
                self.log.warning("operation_failed", operation=operation, error=first, failures=len(errors))
            self._errors[operation] = first
        self.last_error = next(iter(self._errors.values()), None)
