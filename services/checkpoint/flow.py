"""One flow of the checkpoint service: offset syncs in, committed offsets translated, checkpoints out.

Order at start, as MM2: the checkpoints topic is read to its end (the last checkpoint of every group, so
nothing is ever emitted behind it), then the offset-syncs topic is read to its end, and only then does
translation start. Both topics are followed afterwards, so checkpoints that other instances write are
seen when a shard moves here. Groups are split over instances by `stable_shard` and a ShardLease.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Sequence

from services.checkpoint.checkpoint_table import CheckpointTable
from services.checkpoint.metrics import CheckpointMetrics
from services.checkpoint.offset_syncer import GroupOffsetSyncer
from services.checkpoint.rules import CheckpointRules
from services.checkpoint.settings import CheckpointSettings
from services.checkpoint.source_groups import SourceGroups
from services.checkpoint.status import FlowStatusReporter
from shared.cluster_watch import ClusterWatch
from shared.config import FlowConfig
from shared.control import ControlPublisher
from shared.control.status_reporter import State
from shared.errors import StraitError
from shared.filters import DefaultGroupFilter
from shared.flow_topics import FlowTopics
from shared.flow_unit import FlowUnit
from shared.kafka.follow import FollowedRecord, TopicFollower
from shared.kafka.group_offsets import GroupAdmin
from shared.kafka.group_requests import GroupOffsetsClient
from shared.kafka.record_writer import RecordWriter
from shared.kafka.topic_admin import TopicAdmin
from shared.lease import ShardLease
from shared.offset_sync_store import OffsetSyncStore
from shared.records.reading import decoded

SERVICE = "checkpoint"


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
        if self._settings.offset_syncs_topic_location == "source":
            self.offset_syncs_topic = topics.policy.offset_syncs_topic(flow.target)
            self._syncs_props = flow.source_consumer_props()
        else:
            self.offset_syncs_topic = topics.policy.offset_syncs_topic(flow.source)
            self._syncs_props = flow.target_consumer_props()
        self.store: OffsetSyncStore | None = None
        self.table = CheckpointTable(self._group_filter.should_replicate_group)
        self._rules = CheckpointRules(flow.source, flow.target, topics.policy, topics.topic_filter, self._translate)
        self._replication_factor = replication_factor
        self._timeout_s = self._settings.admin_timeout_ms / 1000
        self._target_admin: TopicAdmin | None = None
        self.status = FlowStatusReporter(self, settings.instance_id, publisher)
        self._checkpoints_follower = TopicFollower(
            flow.target_consumer_props(), self.checkpoints_topic, self.table.handle_records
        )
        self._source: SourceGroups | None = None
        self._writer: RecordWriter | None = None
        self.syncer: GroupOffsetSyncer | None = None
        self.relevant_groups: list[str] = []
        self.checkpoints_written = 0
        self.misses = 0
        self.invalid_syncs = 0
        self.last_round_ms: float | None = None
        self._errors: dict[str, str] = {}

    @property
    def ready(self) -> bool:
        """Translating, or nothing to do (checkpoints turned off for the flow)."""
        return self.translating or not self._settings.emit_checkpoints_enabled

    @property
    def translating(self) -> bool:
        """True once the checkpoints and the offset syncs were read to their ends."""
        return self.store is not None and self.store.read_to_end

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
        self._source = SourceGroups(self.flow, self._group_filter, self.lease.owns, timeout_s=self._timeout_s)
        self._writer = RecordWriter(self.flow.target, self.flow.target_producer_props())
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
        next_emit = next_sync = 0.0
        owned: frozenset[int] = frozenset()
        while not self.stopping:
            error_before = self.last_error
            if self.store is None and self._checkpoints_follower.caught_up:
                self._start_reading_syncs()
            if self.lease.owned != owned:
                owned = self.lease.owned
                if self._source is not None:
                    self._source.refresh_soon()  # newly owned groups are only found by a full listing
                self._metrics.owned_shards.labels(self.flow.name).set(len(owned))
            active = self.translating and bool(owned)
            if active and time.monotonic() >= next_emit:
                started = time.monotonic()
                await self._guarded("checkpoint round", self._emit_round())
                next_emit = started + self._settings.emit_checkpoints_interval_s
            if active and self.syncer is not None and time.monotonic() >= next_sync:
                started = time.monotonic()
                await self._guarded("group offset sync", self._sync_round())
                next_sync = started + self._settings.sync_group_offsets_interval_s
            if self.last_error != error_before:
                await self.publish_status()  # failing or recovered: say so now
            wake = [time.monotonic() + self._status_interval_s]
            if active:
                wake.append(next_emit)
                if self.syncer is not None:
                    wake.append(next_sync)
            else:
                wake.append(time.monotonic() + 0.5)  # until the topics are read: look again soon
            await self.wait_round(min(wake) - time.monotonic(), lease_moved=self.lease.owned != owned)

    async def release(self) -> None:
        """Stop reading group offsets, flush what is written (the followers were cancelled with the unit's tasks)."""
        if self._source is not None:
            await self._source.close()
        if self.syncer is not None:
            await self.syncer.close()
        if self._writer is not None:
            await asyncio.to_thread(self._writer.close)

    async def publish_status(self, state: State | None = None) -> None:
        """Publish the flow's status now; never raises."""
        await self.status.publish(state)

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

    # -- rounds ----------------------------------------------------------------------------------
    async def _emit_round(self) -> None:
        assert self._source is not None
        assert self._writer is not None
        started = time.monotonic()
        offsets, failures = await self._source.read()
        self._note_errors("read group offsets", list(failures.values()))
        read_ms = time.time() * 1000
        new = []
        misses = 0
        relevant = []
        for group, group_offsets in offsets.items():
            if not self._rules.relevant(group_offsets):
                continue
            relevant.append(group)
            outcome = self._rules.for_group(group, group_offsets, self.table.for_group(group))
            new.extend(outcome.checkpoints)
            misses += outcome.misses
        self.relevant_groups = self._source.relevant = relevant
        if new:
            records = [(checkpoint.record_key(), checkpoint.record_value()) for checkpoint in new]
            log_offsets = await asyncio.to_thread(
                self._writer.write, self.checkpoints_topic, records, timeout_s=self._timeout_s
            )
            latency_ms = time.time() * 1000 - read_ms
            for checkpoint, log_offset in zip(new, log_offsets, strict=True):
                self.table.apply(checkpoint, log_offset)
                self._metrics.latency_ms.labels(self.flow.name).observe(latency_ms)
        self.checkpoints_written += len(new)
        self.misses += misses
        name = self.flow.name
        self._metrics.checkpoints.labels(name).inc(len(new))
        self._metrics.misses.labels(name).inc(misses)
        self._metrics.groups.labels(name).set(len(relevant))
        self._metrics.partitions.labels(name).set(self.table.partition_count(relevant))
        self._metrics.rounds.labels(name).inc()
        elapsed = time.monotonic() - started
        self._metrics.round_seconds.labels(name).observe(elapsed)
        self.last_round_ms = round(elapsed * 1000, 1)
        self.log.debug("checkpoint_round", groups=len(relevant), checkpoints=len(new), misses=misses, ms=elapsed * 1000)

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
