"""One flow of the checkpoint service: offset syncs in, committed offsets translated, checkpoints out.

Order at start, as MM2: the checkpoints topic is read to its end (the last checkpoint of every group, so
nothing is ever emitted behind it), then the offset-syncs topic is read to its end, and only then does
translation start. Both topics are followed afterwards, so checkpoints that other instances write are
seen when a shard moves here. Groups are split over instances by `stable_shard` and a ShardLease.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Sequence

import structlog

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
from shared.errors import CodecError, StraitError
from shared.filters import DefaultGroupFilter
from shared.flow_topics import FlowTopics
from shared.kafka.factories import AdminClient, confluent_admin
from shared.kafka.follow import FollowedRecord, TopicFollower
from shared.kafka.group_offsets import GroupAdmin
from shared.kafka.group_requests import GroupOffsetsClient
from shared.kafka.record_writer import RecordWriter
from shared.kafka.topics import ensure_internal_topic_async
from shared.lease import ShardLease
from shared.offset_sync_store import OffsetSyncStore

SERVICE = "checkpoint"
OPEN_RETRY_S = 5.0


class FlowCheckpointer:
    """Runs until `request_stop`; `close` publishes the final status and releases everything."""

    def __init__(self, flow: FlowConfig, settings: CheckpointSettings, metrics: CheckpointMetrics) -> None:
        self.flow = flow
        self._settings = flow.settings
        self._metrics = metrics
        self.log = structlog.get_logger(SERVICE).bind(flow=flow.name)
        topics = FlowTopics.for_flow(flow)
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
        self._replication_factor = self._settings.checkpoints_topic_replication_factor
        self._timeout_s = self._settings.admin_timeout_ms / 1000
        self._target_admin: AdminClient | None = None
        self.lease = ShardLease(
            flow.target_consumer_props(),
            group_id=topics.lease_group(SERVICE),
            topic=topics.lease_topic(SERVICE),
            shards=settings.shards,
            replication_factor=self._replication_factor,
            instance_id=settings.instance_id,
        )
        self._publisher = ControlPublisher(flow.target_producer_props(), replication_factor=self._replication_factor)
        self.status = FlowStatusReporter(self, settings.instance_id, self._publisher)
        self._status_interval_s = settings.status_interval_s
        self._checkpoints_follower = TopicFollower(
            flow.target_consumer_props(), self.checkpoints_topic, self.table.handle_records
        )
        self._syncs_follower: TopicFollower | None = None
        self._source: SourceGroups | None = None
        self._writer: RecordWriter | None = None
        self.syncer: GroupOffsetSyncer | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self.watch = ClusterWatch.for_flows([flow])
        self._reporting: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self.opened = False
        self.relevant_groups: list[str] = []
        self.checkpoints_written = 0
        self.misses = 0
        self.invalid_syncs = 0
        self.last_round_ms: float | None = None
        self.last_error: str | None = None
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
    async def run(self) -> None:
        """Open, then translate and emit while this instance owns shards, until `request_stop`."""
        if not self._settings.emit_checkpoints_enabled:
            self.log.info("checkpoints_disabled", key="emit.checkpoints.enabled")
            return
        if not await self._open():
            return
        self._tasks.append(asyncio.create_task(self._checkpoints_follower.run(), name=f"checkpoints:{self.flow.name}"))
        # A round can wait a long time on a cluster that stopped answering: the status must not wait with it.
        self._reporting = asyncio.create_task(self._report_periodically(), name=f"status:{self.flow.name}")
        next_emit = next_sync = 0.0
        owned: frozenset[int] = frozenset()
        while not self._stop.is_set():
            self._raise_if_follower_failed()
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
                await self.status.publish()  # failing or recovered: say so now
            wake = [time.monotonic() + self._status_interval_s]
            if active:
                wake.append(next_emit)
                if self.syncer is not None:
                    wake.append(next_sync)
            else:
                wake.append(time.monotonic() + 0.5)  # until the topics are read: look again soon
            await self._wait(min(wake) - time.monotonic(), owned)

    def request_stop(self) -> None:
        """Make `run` return after its current step."""
        self._stop.set()

    async def _report_periodically(self) -> None:
        """Every `status_interval_s`: probe the flow's clusters, then publish the status."""
        while not self._stop.is_set():
            await self.watch.probe_async()
            await self.status.publish()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), timeout=self._status_interval_s)

    async def close(self) -> None:
        """Final "stopped" status, leave the lease, stop following, flush and close (reverse of opening)."""
        self._stop.set()
        if self._reporting is not None:
            self._reporting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reporting
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self.lease.stop()
        if self._source is not None:
            await self._source.close()
        if self.syncer is not None:
            await self.syncer.close()
        if self._writer is not None:
            await asyncio.to_thread(self._writer.close)
        if self.opened:
            await self.status.publish("stopped")
            await self._publisher.stop()
            self.opened = False

    async def _open(self) -> bool:
        """Status publisher, checkpoints topic, clients and lease; retried while the target is unreachable."""
        reported: str | None = None
        while not self._stop.is_set():
            try:
                if not self.opened:
                    await self._publisher.start()
                    self.opened = True
                if self._target_admin is None:  # made once: the open is retried while the target is down
                    self._target_admin = confluent_admin(self.flow.target_admin_props())
                await ensure_internal_topic_async(
                    self._target_admin, self.checkpoints_topic, replication_factor=self._replication_factor
                )
                await self.lease.start()
            except StraitError as exc:
                if not exc.retriable:
                    raise
                self.last_error = str(exc)
                if str(exc) != reported:
                    reported = str(exc)
                    self.log.warning("open_failed", error=str(exc), retry_s=OPEN_RETRY_S)
                await self._wait(OPEN_RETRY_S)
                continue
            self._source = SourceGroups(self.flow, self._group_filter, self.lease.owns, timeout_s=self._timeout_s)
            self._writer = RecordWriter(self.flow.target, self.flow.target_producer_props())
            if self._settings.sync_group_offsets_enabled:
                target_props = self.flow.target_admin_props()
                self.syncer = GroupOffsetSyncer(
                    self.flow.name,
                    GroupAdmin(self.flow.target, self._target_admin, timeout_s=self._timeout_s),
                    GroupOffsetsClient(self.flow.target, target_props, timeout_s=self._timeout_s),
                    self.table,
                    self._metrics,
                )
            self.last_error = None
            self.log.info(
                "flow_opened",
                checkpoints_topic=self.checkpoints_topic,
                offset_syncs_topic=self.offset_syncs_topic,
                lease_topic=self.lease.topic,
                shards=self.lease.shards,
            )
            return True
        return False

    def _start_reading_syncs(self) -> None:
        # The last checkpoints are known, so (as MM2 when its checkpoint store loaded) the initial read may
        # keep every sync instead of only the latest: checkpoints never go behind what was emitted before.
        self.store = store = OffsetSyncStore(initialization_must_read_to_end=False)
        self._syncs_follower = TopicFollower(
            self._syncs_props, self.offset_syncs_topic, self._handle_syncs, on_caught_up=store.mark_read_to_end
        )
        self._tasks.append(asyncio.create_task(self._syncs_follower.run(), name=f"offset-syncs:{self.flow.name}"))

    def _handle_syncs(self, records: Sequence[FollowedRecord]) -> None:
        assert self.store is not None
        for record in records:
            if record.key is None or record.value is None:
                continue
            try:
                self.store.handle_record(record.key, record.value, record.headers)
            except CodecError as exc:
                self.invalid_syncs += 1
                self.log.warning(
                    "invalid_offset_sync_skipped", topic=self.offset_syncs_topic, offset=record.offset, error=str(exc)
                )

    def _translate(self, topic: str, partition: int, offset: int) -> int | None:
        return None if self.store is None else self.store.translate_exact(topic, partition, offset)

    def _raise_if_follower_failed(self) -> None:
        for task in self._tasks:
            failure = task.exception() if task.done() and not task.cancelled() else None
            if failure is not None:
                raise failure

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

    async def _wait(self, timeout_s: float, owned: frozenset[int] | None = None) -> None:
        """Sleep up to `timeout_s`, waking early on stop or when the owned shards differ from `owned`."""
        self.lease.changed.clear()
        if self._stop.is_set() or timeout_s <= 0 or (owned is not None and self.lease.owned != owned):
            return
        await self.lease.wait_change(self._stop, timeout_s)
