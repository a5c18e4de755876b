"""Batch forwarding: the copier that moves the source's record batches to the target as they are.

Python works per batch, not per record: a fetched v2 batch gets the target's own header fields (base offset,
producer id, epoch and sequence; see `shared.kafka.record_batches`) and goes out still compressed; the target
gives its records consecutive offsets, so one offset sync per run of batches stays exact. Whether a batch goes as
it is, merged with its neighbours or re-encoded is `forwarding`'s decision; a batch the target refuses is sent
again one record per batch, and a record refused on its own stops its partition exactly as the record path does
(`PartitionCopy.refuse`). Which partitions each fetch names is `fetch_lanes`', the leader-epoch checks before a
fetch `epoch_checks`', what a fetch or produce error means `shared.kafka.error_classes`'.

Positions, progress, offset syncs and hand-over are the task loop's (`task_loop.TaskLoop`); progress records go
out through this copier's producer (`progress_batches`), so the target has one client per task.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from services.data_mirror.batch_sends import BatchSends
from services.data_mirror.copier import FLUSH_TIMEOUT_S, FetchPosition, ProgressFailed, TaskFailed
from services.data_mirror.epoch_checks import EpochChecks, Fetching
from services.data_mirror.fetch_lanes import NO_LEADER, FetchKey, FetchLanes
from services.data_mirror.forwarding import groups
from services.data_mirror.partition_copy import Clock, PartitionCopy
from services.data_mirror.progress_batches import ProgressBatches, progress_landed
from services.data_mirror.resume import diverged_at
from services.data_mirror.task_clients import TaskClients
from services.data_mirror.work import DEFAULT_BATCH_BYTES, TaskSpec
from shared.errors import KafkaOperationError
from shared.kafka.batch_fetcher import PartitionFetch
from shared.kafka.batch_link import BatchLink
from shared.kafka.error_classes import ErrorClass, error_class, error_name
from shared.kafka.error_codes import OFFSET_OUT_OF_RANGE, TOPIC_AUTHORIZATION_FAILED
from shared.kafka.outgoing_batches import Landed, Outcome
from shared.kafka.record_batches import (
    CommittedFilter,
    SourceBatch,
    read_batches,
)
from shared.partition_key import PartitionKey

MAX_QUEUED_BATCHES = 8  # per partition: it is left out of fetches while this many wait for the target
# A fetch's small batches are merged (`forwarding`): a partition has at most five batches in flight, so tiny ones
# would cap the copy far below the rate the source was written at.
WAKE_S = 0.05
REFRESH_EVERY_S = 0.5
FETCH_RETRY_BACKOFF_S = 0.1
# One fetch brings at most this share of the byte bound: its response is held twice while it arrives (the
# connection's read buffer, then the response's own bytes), so a fetch of the whole room made a worker's memory peak
# near twice the bound once a fetch had enough partitions to fill it (hundreds; a dozen partitions bring at most a
# dozen max.partition.fetch.bytes). Smaller fetches in a row fill the same room. (Decoding adds no copy, record sets
# are views of the response, `fetch_response`; forwarding copies each batch's records out of it, once.)
FETCH_SHARE_OF_BUFFER = 4


class BatchCopier:
    """Forwards the source's record batches (`spec.copy_batches`), fetching and producing over the Kafka protocol."""

    def __init__(self, spec: TaskSpec, clients: TaskClients, clock: Clock) -> None:
        self.spec = spec
        self.clients = clients
        self.clock = clock
        self.link: BatchLink | None = None
        self.parts: dict[PartitionKey, PartitionCopy] = {}
        self.fetching: dict[PartitionKey, Fetching] = {}
        self._sends = BatchSends(lambda: self._link.producer, clock, self.hold, spec.reshaper())
        self.read_errors = 0
        self._fetches: dict[FetchKey, asyncio.Task[dict[PartitionKey, PartitionFetch]]] = {}
        self._refreshed = 0.0
        self._refreshing: asyncio.Future[None] | None = None
        self._node_retry_at: dict[int, float] = {}
        self._fetch_limits: dict[FetchKey, int] = {}  # (source leader, lane) -> the bytes its fetch may bring
        self._fetched_from: set[FetchKey] = set()  # the leaders' lanes the last round of fetches went to
        self._epochs = EpochChecks()
        self._lanes = FetchLanes()
        self._target_batch_bytes = int(spec.target_producer.get("batch.size", DEFAULT_BATCH_BYTES))
        self._bound_per_lane = "buffer.memory" not in spec.target_producer  # unset: the bound grows with distance
        self._progress = ProgressBatches(spec.progress_topic)

    @property
    def records(self) -> int:
        return self._sends.records

    @property
    def _link(self) -> BatchLink:
        assert self.link is not None, "open() first"
        return self.link

    async def open(self) -> None:
        self.link = await self.clients.open_batch_link()
        # Progress goes first in every request: a catch-up that fills the requests with data must not hold back
        # the commits (their delivery timeout would fail the task).
        self.link.producer.prioritise((self.spec.progress_topic, 0))

    async def close(self) -> None:
        for pending in [*self._fetches.values(), *self._epochs.pending()]:
            pending.cancel()
        if self.link is not None:
            await self.link.close()

    def assign(self, parts: dict[PartitionKey, PartitionCopy]) -> None:
        self.parts = parts
        self.fetching = {key: Fetching(part.position) for key, part in parts.items()}
        self._lanes.assign(parts)

    def _touch(self, key: PartitionKey) -> None:
        """Something happened to `key` that may change whether and where it is fetched: the next round looks."""
        self._lanes.touch(key)

    def hold(self, part: PartitionCopy) -> None:
        part.paused = True
        self._touch(part.work.key)

    def release(self, part: PartitionCopy, offset: int) -> None:
        part.paused = False
        self._touch(part.work.key)
        fetching = self.fetching[part.work.key]
        fetching.position = offset
        fetching.one_by_one_until = max(fetching.one_by_one_until, offset)

    def positions(self) -> dict[PartitionKey, FetchPosition]:
        """Fetching moves past what it skips without a record (transaction markers, aborted data, retention)."""
        return {key: FetchPosition(fetching.position) for key, fetching in self.fetching.items()}

    def take_read_errors(self) -> int:
        errors, self.read_errors = self.read_errors, 0
        return errors

    def write_progress(self, key: bytes, value: bytes, on_failure: ProgressFailed) -> None:
        """Kept until the commit's last one is written (`progress_batches`)."""
        self._progress.add(key, value, int(self.clock.now_ms or time.time() * 1000), on_failure)

    # -- the loop ---------------------------------------------------------------------------------------
    async def step(self) -> None:
        """Fetch for the partitions that have room, wait for an answer of either side, forward and take them."""
        fetches = self._fetches
        self._start_fetches(fetches)
        await self._wake(*fetches.values())
        self._take_landed()  # first: a refusal rewinds its partition before newer data is queued
        self._take_validations()
        self._rewind_diverged()
        for lane, fetch in list(fetches.items()):
            if fetch.done():
                del fetches[lane]
                self._fetch_limits.pop(lane, None)
                self._take_fetch(lane[0], fetch)
        self._progress.send(self._link.producer)
        self._link.producer.pump()

    # -- exactly-once (`copier.Transactions`): the batches and their progress in the producer's transaction ----
    def begin(self) -> None:
        self._link.producer.begin_transaction()

    async def commit(self) -> None:
        await self.settle(wait=True)
        try:
            await self._link.producer.commit_transaction()
        except KafkaOperationError as exc:
            raise TaskFailed(f"commit failed, resuming from the committed progress: {exc}") from exc

    async def abort(self) -> None:
        try:
            await self._link.producer.abort_transaction(FLUSH_TIMEOUT_S)
        except KafkaOperationError as exc:
            raise TaskFailed(f"abort failed, resuming from the committed progress: {exc}") from exc
        self._take_landed()  # what was queued is dropped

    def abandon(self, timeout_s: float) -> None:
        """Nothing to end from outside the loop: the slot's next task fences this producer, which aborts it."""

    async def settle(self, *, wait: bool) -> None:
        """Without `wait`, send what is queued; with it, until the target answered every batch sent."""
        self._progress.send(self._link.producer)
        self._link.producer.pump()
        if not wait:
            return
        deadline = time.monotonic() + FLUSH_TIMEOUT_S
        while not self._link.producer.idle():
            if time.monotonic() > deadline:
                raise TaskFailed(f"batches not acknowledged within {FLUSH_TIMEOUT_S}s")
            self._link.producer.pump()
            await self._wake()
            self._take_landed()
        self._take_landed()
        self._rewind_diverged()

    async def _wake(self, *fetches: asyncio.Future[Any]) -> None:
        """Wait until the target answers, a fetch returns or WAKE_S passes; then read the clock."""
        answered = asyncio.ensure_future(self._link.producer.wait())
        await asyncio.wait([*fetches, answered], timeout=WAKE_S, return_when=asyncio.FIRST_COMPLETED)
        answered.cancel()
        self.clock.now_ms = time.time() * 1000

    def _start_fetches(self, fetches: dict[FetchKey, asyncio.Task[dict[PartitionKey, PartitionFetch]]]) -> None:
        if self._fetched_from and self._fetched_from <= fetches.keys():
            return  # every leader of the last round still fetches: the partitions are looked at when one answers
        # Bytes held are bounded (the target producer's buffer.memory): queued and in-flight batches plus what
        # the fetches under way may bring. Out of room, nothing is fetched until the target acknowledges.
        bound = self._byte_bound()
        room = bound - self._link.producer.buffered_bytes - sum(self._fetch_limits.get(lane, 0) for lane in fetches)
        if room <= 0:
            return
        now = time.monotonic()
        self._look(now)
        by_lane = {
            lane: members
            for lane, members in self._lanes.members.items()
            if members and lane not in fetches and now >= self._node_retry_at.get(lane[0], 0.0)
        }
        # each fetch may bring its share of the room, and never more than a part of the bound
        share = min(room // max(len(by_lane), 1), bound // FETCH_SHARE_OF_BUFFER)
        # Every partition in a fetch (none held, none without a leader): none waits for a fetch to answer before it
        # is fetched again, so the fetches may wait long on a quiet source; otherwise briefly, for the held ones.
        long_poll = len(self._lanes.lane_of) == len(self.parts)
        self._fetched_from = set(by_lane) | (set(fetches) if by_lane else set())
        now_at = {key: fetching.position for key, fetching in self.fetching.items()}
        for lane in by_lane:
            positions = self._lanes.next_fetch(lane, now_at)
            self._fetch_limits[lane] = share
            fetch = self._link.fetcher.fetch(lane[0], positions, share, lane[1], long_poll=long_poll)
            fetches[lane] = asyncio.ensure_future(fetch)

    def _byte_bound(self) -> int:
        """The bytes this task may hold (queued for the target, in flight to it, and what its fetches under way may
        bring): the target producer's buffer.memory; when the flow sets none, Kafka's default once per fetch lane of
        the most distant source leader it fetches from. A far leader's data spends a round trip on the link before it
        is held here: with one default bound for all its lanes, each fetch waited for the target to free room, and at
        150 ms the copy ran at half its near rate (the bandwidth-delay product was the limit, not the link or CPU)."""
        bound = self._link.producer.buffer_bytes
        return bound * self._lanes.distance if self._bound_per_lane else bound

    def _look(self, now: float) -> None:
        """Decide again which partitions are fetched, and in which lane (`fetch_lanes`); a partition with no
        leader known asks for new metadata."""
        seen = (self._link.fetcher.changes, self._link.producer.readiness_changes)
        self._lanes.look(now, seen, self.parts, self._lane_now, self._link.fetcher.lanes)
        if self._lanes.leaderless:
            self._refresh()  # (at most every REFRESH_EVERY_S)

    def _lane_now(self, key: PartitionKey) -> FetchKey | None:
        """The lane `part` is fetched in now; None while it may not be fetched (held, as many batches waiting for
        the target as a partition may have, a target partition not taking batches yet, a leader epoch to check),
        NO_LEADER while its leader is unknown."""
        part = self.parts.get(key)
        if part is None:
            return None
        remote, producer = part.work.remote_key, self._link.producer
        if part.paused or producer.in_flight(remote) >= MAX_QUEUED_BATCHES:
            return None
        if not producer.ready(remote):
            return None  # not fetched before the target partition takes batches (probed: see BatchProducer.ready)
        if not self._epoch_checked(key):
            return None
        node = self._link.fetcher.leader(key)
        if node is None:
            return NO_LEADER
        # a distant leader's partitions are spread over several sessions fetched at once (BatchFetcher.lanes)
        return self._lanes.lane(key, node, self._link.fetcher.lanes(node))

    # -- leader epochs (KIP-320) ------------------------------------------------------------------------
    def _epoch_checked(self, key: PartitionKey) -> bool:
        """True when the partition may be fetched: its position is known to be on the current leader's log."""
        fetcher = self._link.fetcher
        return self._epochs.checked(key, self.fetching[key], fetcher.epoch(key), lambda *ask: fetcher.epoch_end(*ask))

    def _take_validations(self) -> None:
        for key, end_offset in self._epochs.answers():
            self._touch(key)  # answered or not, whether it may be fetched is decided again
            part, fetching = self.parts.get(key), self.fetching.get(key)
            if part is None or fetching is None:
                continue
            if end_offset is None:  # not answered: asked again after new metadata
                self.read_errors += 1
                self._refresh()
                continue
            fetching.validated = self._link.fetcher.epoch(key)
            diverged = diverged_at(end_offset, fetching.position)
            if diverged is not None:
                self._diverged(part, fetching, diverged)

    def rewind(self, part: PartitionCopy, offset: int) -> None:
        self._diverged(part, self.fetching[part.work.key], offset)

    def _diverged(self, part: PartitionCopy, fetching: Fetching, offset: int) -> None:
        """The source log was truncated under our position (an unclean leader election): what we copied from
        `offset` on is no longer there, and the records written there now are not those. Copy again from `offset`,
        as Kafka's Java consumer resets to the first offset known to diverge, once what is in flight answered."""
        self.hold(part)
        part.diverge(offset)

    def _rewind_diverged(self) -> None:
        """Rewind each diverged partition whose in-flight batches answered, so none of them moves it on again."""
        for key, part in self.parts.items():
            if part.diverged_at is None or part.in_flight:
                continue
            fetching = self.fetching[key]
            self._touch(key)
            part.rewind()
            fetching.position = part.position
            fetching.one_by_one_until = min(fetching.one_by_one_until, part.position - 1)
            part.paused = False

    def _refresh(self) -> None:
        now = time.monotonic()
        if now - self._refreshed >= REFRESH_EVERY_S:
            self._refreshed = now
            self._refreshing = asyncio.ensure_future(self._link.fetcher.refresh())

    # -- what was fetched -------------------------------------------------------------------------------
    def _take_fetch(self, node: int, fetch: asyncio.Task[dict[tuple[str, int], PartitionFetch]]) -> None:
        try:
            fetched = fetch.result()
        except KafkaOperationError:  # the connection failed: ask again after new metadata, not at once
            self.read_errors += 1
            self._node_retry_at[node] = time.monotonic() + FETCH_RETRY_BACKOFF_S
            self._refresh()
            return
        if fetched and all(answer.error for answer in fetched.values()):
            self._node_retry_at[node] = time.monotonic() + FETCH_RETRY_BACKOFF_S
        out_of_range: list[tuple[PartitionCopy, Fetching]] = []
        self._lanes.touch(*fetched)
        for key, answer in fetched.items():
            part, fetching = self.parts.get(key), self.fetching.get(key)
            if part is None or fetching is None or part.paused or answer.requested != fetching.position:
                continue  # a rewind or a release moved the position while this fetch was out
            if answer.error == OFFSET_OUT_OF_RANGE:
                out_of_range.append((part, fetching))
            elif answer.error:
                self._fetch_error(part, fetching, answer.error)
            else:
                if answer.high_watermark >= 0:
                    part.end_offset = answer.high_watermark
                self._forward_batches(part, fetching, answer)
        if out_of_range:
            self._fetch_out_of_range(out_of_range)

    def _forward_batches(self, part: PartitionCopy, fetching: Fetching, answer: PartitionFetch) -> None:
        batches = read_batches(answer.records)
        corrupt = next((batch for batch in batches if batch.corrupt), None)
        if corrupt is not None:
            batches = batches[: batches.index(corrupt)]  # what comes before it is whole: copied as usual
        kept = CommittedFilter(answer.aborted).committed(batches) if self._link.read_committed else batches
        due = [batch for batch in kept if not batch.is_control and batch.last_offset >= fetching.position]
        for group in groups(due, self._sends.state(part, fetching), self._target_batch_bytes):
            sends = self._sends
            sent = sends.send(part, fetching, group[0]) if len(group) == 1 else sends.merge(part, fetching, group)
            if not sent:
                return  # the partition stopped at a refused record
            fetching.position = group[-1].next_offset
        if batches:
            fetching.position = max(fetching.position, batches[-1].next_offset)
            fetching.epoch = part.leader_epoch = batches[-1].leader_epoch
        if corrupt is not None and corrupt.last_offset >= fetching.position:
            self._stop_at_corrupt(part, fetching, corrupt)

    def _stop_at_corrupt(self, part: PartitionCopy, fetching: Fetching, batch: SourceBatch) -> None:
        offset = max(batch.base_offset, fetching.position)
        part.stop_at_corrupt(offset, batch.corrupt or "checksum mismatch")
        self._sends.stop_at(part, fetching, offset)

    def _fetch_error(self, part: PartitionCopy, fetching: Fetching, code: int) -> None:
        """A partition's fetch answered with an error (`error_classes` says what it is about)."""
        kind = error_class(code, reading=True)
        if kind is ErrorClass.TOPIC_GONE and not self._link.fetcher.knows(part.work.source_topic):
            # deleted on the source (the driver's next refresh drops it), or not known for a moment: held, reported,
            # and looked at again by the task loop
            part.hold_on_source("topic not found on the source: looked at again", fetching.position)
            self.hold(part)
        elif kind in (ErrorClass.RETRY, ErrorClass.TOPIC_GONE):  # a leader moved, a replica is behind: new
            # metadata, then the next fetch
            self.read_errors += 1
            self._refresh()
        elif code == TOPIC_AUTHORIZATION_FAILED:
            raise TaskFailed(f"not allowed to read {part.work.source_topic} (TOPIC_AUTHORIZATION_FAILED)")
        else:  # not transient: the task starts again from its committed progress, as the record path's does
            where = f"{part.work.source_topic}-{part.work.partition}"
            raise TaskFailed(f"fetching {where} failed: {error_name(code)}")

    def _fetch_out_of_range(self, parts: list[tuple[PartitionCopy, Fetching]]) -> None:
        """Retention deleted what we were about to read, or a partition is shorter than our position: one look-up
        of the bounds for all the partitions one fetch found out of range (retention passing a lagging mirror
        finds many at once, and the look-up blocks the loop)."""
        earliest, latest = self.clients.offset_bounds([part.work.key for part, _ in parts])
        for part, fetching in parts:
            low, high = earliest.get(part.work.key), latest.get(part.work.key)
            if low is None or high is None:
                continue  # not known: the next fetch tells
            resume = part.skip_out_of_range(fetching.position, low, high, to_latest=self.spec.reset_to_latest)
            if resume < fetching.position:
                self.hold(part)  # a reset backwards: fetched again once in flight answered (`_rewind_diverged`)
            fetching.position = resume

    # -- what the target answered -----------------------------------------------------------------------
    def _take_landed(self) -> None:
        for landed in self._link.producer.take_landed():
            if progress_landed(self._link.producer, landed):
                continue
            part, upstream, newest_ms = landed.batch.note
            self._touch(part.work.key)
            if landed.outcome is Outcome.ACKNOWLEDGED:
                part.landed(upstream, landed.base_offset, newest_ms)
            elif landed.outcome is Outcome.DROPPED:
                part.in_flight.popleft()
            else:
                part.in_flight.popleft()
                self._refused(part, upstream, landed)

    def _refused(self, part: PartitionCopy, upstream: Sequence[int], landed: Landed) -> None:
        """A batch of several records is sent again record by record; a single refused record stops the partition.

        Either way the partition starts again from the refused batch: what was queued behind it is dropped. A stop
        further on (a corrupt batch, a refusal) may already hold the partition: it is fetched again all the same, up
        to that stop, or it would wait for a retry that is due only once everything before the stop is copied."""
        fetching = self.fetching[part.work.key]
        fetching.position = upstream[0]
        self._link.producer.resume(part.work.remote_key)
        if len(upstream) > 1:
            fetching.one_by_one_until = max(fetching.one_by_one_until, upstream[-1])
            part.reencoded_reason = f"refused as a batch: {landed.message}"
            if part.paused and part.held_at is not None and part.held_at > upstream[0] and part.diverged_at is None:
                part.paused = False
            return
        where = f"writing {part.work.remote_topic}-{part.work.partition}"
        part.refuse(upstream[0], f"{landed.message} ({where})")
        self.hold(part)
