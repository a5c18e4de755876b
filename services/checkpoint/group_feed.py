"""Where one flow's group offsets come from, and which groups changed since they were last translated.

MM2's connector lists the source's groups and its task reads their offsets every interval; Strait follows the
source's `__consumer_offsets` as a stream instead (commit_stream.py), so a commit is known as it happens. This
module owns the choice between the two (`strait.checkpoints.source`: auto streams and falls back to polling with
a warning when reading is refused, stream insists, poll never streams) and the moves between them: polling until
`__consumer_offsets` exists, then streaming. The checkpointer never asks where offsets came from.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from structlog.typing import FilteringBoundLogger

from services.checkpoint.commit_stream import CONSUMER_OFFSETS_TOPIC, StreamedSourceGroups
from services.checkpoint.source_groups import SourceGroups
from shared.config import FlowConfig
from shared.errors import AuthorizationError, KafkaOperationError, StraitError
from shared.events import wait_any
from shared.filters import GroupFilter
from shared.kafka.group_offsets import GroupOffsets
from shared.kafka.topic_admin import TopicAdmin
from shared.lease import ShardLease

GroupSource = SourceGroups | StreamedSourceGroups
Spawn = Callable[[Coroutine[Any, Any, None], str], asyncio.Task[None]]
FOLLOW_OPERATION = f"follow {CONSUMER_OFFSETS_TOPIC}"


class GroupFeed:
    """One flow's source groups and their committed offsets, streamed or polled, for the shards `lease` owns."""

    def __init__(
        self,
        flow: FlowConfig,
        group_filter: GroupFilter,
        lease: ShardLease,
        *,
        timeout_s: float,
        spawn: Spawn,
        log: FilteringBoundLogger,
        count_records: Callable[[str, int], None],
    ) -> None:
        self._flow = flow
        self._settings = flow.settings
        self._filter = group_filter
        self._lease = lease
        self._timeout_s = timeout_s
        self._spawn = spawn
        self._log = log
        self._count_records = count_records
        self._source_admin: TopicAdmin | None = None
        self.source: GroupSource | None = None
        self._stream_task: asyncio.Task[None] | None = None
        self._stream_probe_at: float | None = None  # when to look for `__consumer_offsets` again (not there yet)

    @property
    def stream(self) -> StreamedSourceGroups | None:
        """The commit stream, when offsets come from it."""
        return self.source if isinstance(self.source, StreamedSourceGroups) else None

    @property
    def streaming(self) -> bool:
        """Group offsets come from the source's `__consumer_offsets` stream (else from polling)."""
        return self.stream is not None

    @property
    def ready(self) -> bool:
        """Offsets can be translated: a stream read halfway holds older commits, and checkpoints never go back."""
        stream = self.stream
        return self.source is not None and (stream is None or stream.caught_up)

    @property
    def has_changes(self) -> bool:
        """Groups committed (or are still settling) since the last changed round; always False when polling."""
        stream = self.stream
        return stream is not None and (stream.changed.is_set() or stream.settling)

    async def open(self) -> None:
        """The commit stream unless the flow says poll or the source's `__consumer_offsets` cannot be read."""
        mode = self._settings.checkpoints_source
        if mode != "poll":
            partitions = await self._consumer_offsets_partitions()
            if partitions is not None:
                self.source = self._streamed_source(partitions)
                return
        self.source = self._polling_source()

    async def check(self) -> list[BaseException]:
        """Start the stream's follower; fall back to polling when reading is refused (auto); start streaming once
        `__consumer_offsets` exists. Returns the stream's current failures (none when polling)."""
        source = self.source
        if isinstance(source, StreamedSourceGroups):
            if self._stream_task is None:
                self._stream_task = self._spawn(source.follower.run(), "consumer-offsets")
            error = source.follower.last_error
            if isinstance(error, AuthorizationError) and self._settings.checkpoints_source == "auto":
                self._stream_task.cancel()
                self._stream_task = None
                self._warn_polling(error, "READ")
                self.source = self._polling_source()
                return []
            return [error] if error is not None else []
        if self._stream_probe_at is not None and time.monotonic() >= self._stream_probe_at:
            partitions = await self._consumer_offsets_partitions()
            if partitions is not None and isinstance(source, SourceGroups):
                await source.close()
                self.source = self._streamed_source(partitions)
        return []

    def lease_moved(self) -> None:
        """The owned shards changed: a poll lists every group again, a stream follows the new partitions."""
        if isinstance(self.source, SourceGroups):
            self.source.refresh_soon()  # newly owned groups are only found by a full listing

    def follow_owned(self) -> None:
        """A stream follows the `__consumer_offsets` partitions of the owned shards (nothing when polling)."""
        stream = self.stream
        if stream is not None:
            stream.follow_owned()

    async def wait_changes(self, stop: asyncio.Event, timeout_s: float) -> bool:
        """Until groups committed (True), `stop` is set or `timeout_s` passed (False)."""
        if self.has_changes:
            return True
        stream = self.stream
        if stream is None:
            await wait_any((stop,), timeout_s)
            return False
        await wait_any((stop, stream.changed), timeout_s)
        return self.has_changes

    async def read_all(
        self, *, offset_syncs_rewound: bool
    ) -> tuple[dict[str, GroupOffsets], Mapping[str, KafkaOperationError]]:
        """Every group a full round translates, and per-group failures. `offset_syncs_rewound`: a recreated or
        re-copied topic rewound the offset syncs, so groups translated for good are translated again."""
        source = self.source
        assert source is not None
        stream = self.stream
        if stream is not None and offset_syncs_rewound:
            stream.translate_all_again()
        offsets, failures = await source.read()
        if stream is not None:
            stream.read_changed()  # this round covers them
        return offsets, failures

    def read_changed(self, *, offset_syncs_rewound: bool) -> dict[str, GroupOffsets]:
        """The groups that committed since the last round or are still settling (streaming only)."""
        stream = self.stream
        assert stream is not None
        if offset_syncs_rewound:
            stream.translate_all_again()
        return stream.read_changed()

    def translated(self, unsettled: list[str], final: Mapping[str, bool]) -> None:
        """After a round: `unsettled` groups are looked at again soon, `final` ones (group -> relevant) only when
        they commit again (streaming only: a poll reads every group each round)."""
        stream = self.stream
        if stream is not None:
            stream.keep_settling(unsettled)
            stream.translated_for_good(final)

    def left_out_relevant(self) -> list[str]:
        """Relevant groups a full round left out because they are translated for good (streaming only)."""
        stream = self.stream
        return stream.relevant_translated_for_good() if stream is not None else []

    def last_commit_ms(self) -> Mapping[str, float]:
        """When each group's last commit was streamed (wall clock ms; empty when polling)."""
        stream = self.stream
        return stream.table.last_commit_ms if stream is not None else {}

    def set_relevant(self, groups: list[str]) -> None:
        """The groups with offsets on replicated topics, as the last full round found them."""
        if self.source is not None:
            self.source.relevant = groups

    async def close(self) -> None:
        """Disconnect (the stream's follower is a task of the flow unit, cancelled with it)."""
        if self.source is not None:
            await self.source.close()

    # -- choosing ---------------------------------------------------------------------------------------
    async def _consumer_offsets_partitions(self) -> int | None:
        """The partition count of the source's `__consumer_offsets`; None to poll instead (said in the log)."""
        if self._source_admin is None:
            flow = self._flow
            self._source_admin = TopicAdmin(flow.source, flow.source_admin_props(), timeout_s=self._timeout_s)
        try:
            partitions = await asyncio.to_thread(self._source_admin.partition_count, CONSUMER_OFFSETS_TOPIC)
        except AuthorizationError as exc:
            if self._settings.checkpoints_source == "stream":
                raise  # the flow fails to open, saying what is not allowed, until it is
            self._warn_polling(exc, "DESCRIBE")
            return None
        if partitions is None:  # no group ever committed on the source: nothing to stream yet
            self._log.info("consumer_offsets_missing_polling_until_it_exists", cluster=self._flow.source)
            self._stream_probe_at = time.monotonic() + max(1, self._settings.refresh_groups_interval_s)
        else:
            self._stream_probe_at = None
        return partitions

    def _polling_source(self) -> SourceGroups:
        """MM2's way: list the groups and fetch their offsets every round (groups sharded by `stable_shard`)."""
        return SourceGroups(self._flow, self._filter, self._lease.owns, timeout_s=self._timeout_s)

    def _streamed_source(self, partitions: int) -> StreamedSourceGroups:
        source = StreamedSourceGroups(
            self._flow,
            self._filter.should_replicate_group,
            partitions,
            lambda: self._lease.owned,
            self._lease.shards,
            count_records=self._count_records,
        )
        self._log.info("checkpoint_source", source="stream", topic=CONSUMER_OFFSETS_TOPIC, partitions=partitions)
        return source

    def _warn_polling(self, error: StraitError, permission: str) -> None:
        self._log.warning(
            "checkpoint_polling_group_offsets",
            reason=f"cannot read {CONSUMER_OFFSETS_TOPIC} on cluster {self._flow.source}: streamed checkpoints need "
            f"DESCRIBE and READ on topic {CONSUMER_OFFSETS_TOPIC}; missing: {permission}",
            error=str(error),
            interval_s=self._settings.emit_checkpoints_interval_s,
        )
