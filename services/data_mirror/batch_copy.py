"""Batch forwarding: the copier that moves the source's record batches to the target as they are.

Python works per batch, not per record: a fetched v2 batch gets the target's own header fields (base offset,
producer id, epoch and sequence; see `shared.kafka.record_batches`) and goes out still compressed; the target
gives its records consecutive offsets, so one offset sync per run of batches stays exact. A batch that cannot
go as it is (starting before the position, offset gaps left by compaction, log-append timestamps, an old
message format, larger than the target's max.message.bytes) is re-encoded with the same producer, so order and
idempotence hold; a batch the target refuses is sent again one record per batch, and a record refused on its
own stops its partition exactly as the record path does (`PartitionCopy.refuse`). Several small batches that one
fetch brings back to back are merged into one re-encoded batch, so a backlog of tiny batches is not copied at
five batches per round trip; so are uncompressed batches of which two fit the target producer's `batch.size`: a
partition's short backlog then lands in one append, and a broker given thousands of new partitions adds no index
entry to them (each first entry faults a page of a fresh, sparse index into memory: measured, that was most of a
target broker's time in a catch-up of 4,000 partitions).

Only at-least-once flows use it: exactly-once flows copy record by record inside the target transaction.
Positions, progress, offset syncs and hand-over are the task loop's (`task_loop.TaskLoop`); progress records go
out through this copier's producer, one record per batch, so the target has one client per task.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from services.data_mirror.copier import FLUSH_TIMEOUT_S, FetchPosition, ProgressFailed, TaskFailed
from services.data_mirror.partition_copy import Clock, PartitionCopy
from services.data_mirror.record_size import RECORD_BATCH_OVERHEAD
from services.data_mirror.task_clients import TaskClients
from services.data_mirror.work import TaskSpec
from shared.errors import KafkaOperationError
from shared.kafka.batch_fetcher import PartitionFetch
from shared.kafka.batch_link import BatchLink
from shared.kafka.batch_producer import Landed, Outcome, OutgoingBatch
from shared.kafka.error_classes import ErrorClass, error_class, error_name
from shared.kafka.error_codes import OFFSET_OUT_OF_RANGE, TOPIC_AUTHORIZATION_FAILED
from shared.kafka.leader_epochs import NO_EPOCH
from shared.kafka.record_batches import (
    CommittedFilter,
    SourceBatch,
    SourceRecord,
    TargetBatch,
    encode_records,
    for_target,
    read_batches,
    records_of,
)
from shared.partition_key import PartitionKey

FetchKey = tuple[int, int]  # (source leader, fetch lane)
MAX_QUEUED_BATCHES = 8  # per partition: it is left out of fetches while this many wait for the target
# A fetch that brings several small batches of a partition (a backlog of a producer that sends few records per
# batch) merges them: a partition has at most five batches in flight, so tiny ones would cap the copy far below
# the rate the source was written at (one merged batch costs a re-encoding, many tiny ones cost a round trip each).
# Small: few records and few bytes, so the round trip and the per-batch work outweigh re-encoding its records.
SMALL_BATCH_RECORDS = 64
SMALL_BATCH_BYTES = 8 * 1024
MERGED_BATCH_BYTES = 256 * 1024
# A commit's progress records, batched: well under Kafka's default max.message.bytes and max.request.size (1 MiB).
PROGRESS_BATCH_BYTES = 256 * 1024
PROGRESS_RECORD_OVERHEAD = 24  # a v2 record's length, attributes, deltas and header count, generously
DEFAULT_TARGET_BATCH_BYTES = 16_384  # Kafka's producer default batch.size, when the flow sets none
WAKE_S = 0.05
REFRESH_EVERY_S = 0.5
# Every partition is looked at again at least this often, in case a change came that no event told of (aiokafka
# refreshing its metadata by itself); otherwise only the partitions something happened to are (see `_look`).
LOOK_AGAIN_S = 0.5
NO_LEADER: FetchKey = (-1, -1)  # `_lane_now`: the partition's leader is not known
FETCH_RETRY_BACKOFF_S = 0.1
# One fetch brings at most this share of the byte bound: its response is held twice while it arrives (the
# connection's read buffer, then the response's own bytes), so a fetch of the whole room made a worker's memory peak
# near twice the bound once a fetch had enough partitions to fill it (hundreds; a dozen partitions bring at most a
# dozen max.partition.fetch.bytes). Smaller fetches in a row fill the same room. (Decoding adds no copy, record sets
# are views of the response, `fetch_response`; forwarding copies each batch's records out of it, once.)
FETCH_SHARE_OF_BUFFER = 4


def _newest(records: Sequence[SourceRecord]) -> int:
    """The newest timestamp of `records` (-1 when none has one: message format v0)."""
    return max((record.timestamp for record in records if record.timestamp is not None), default=-1)


@dataclass(frozen=True, slots=True)
class _ProgressNote:
    """What a progress batch carries back: whom to tell when it was not written (one per record)."""

    on_failure: tuple[ProgressFailed, ...]


@dataclass
class Fetching:
    """Where the next fetch of a partition starts, and up to where each record goes to the target on its own.

    `epoch` is the leader epoch of the last batch fetched; `validated` the current leader epoch under which the
    position was last known to be on the leader's log (KIP-320). A newer leader epoch is checked before the next
    fetch: a log truncated under the position (an unclean election) rewinds the partition to where it diverged."""

    position: int
    one_by_one_until: int = -1
    epoch: int = NO_EPOCH
    validated: int = NO_EPOCH


class BatchCopier:
    """Forwards the source's record batches (`spec.copy_batches`), fetching and producing over the Kafka protocol."""

    def __init__(self, spec: TaskSpec, clients: TaskClients, clock: Clock) -> None:
        self.spec = spec
        self.clients = clients
        self.clock = clock
        self.link: BatchLink | None = None
        self.parts: dict[PartitionKey, PartitionCopy] = {}
        self.fetching: dict[PartitionKey, Fetching] = {}
        self.records = 0
        self.read_errors = 0
        self._fetches: dict[FetchKey, asyncio.Task[dict[PartitionKey, PartitionFetch]]] = {}
        self._refreshed = 0.0
        self._refreshing: asyncio.Future[None] | None = None
        self._rotations: dict[FetchKey, int] = {}  # per lane: which of its partitions its next fetch names first
        self._node_retry_at: dict[int, float] = {}
        self._fetch_limits: dict[FetchKey, int] = {}  # (source leader, lane) -> the bytes its fetch may bring
        self._fetched_from: set[FetchKey] = set()  # the leaders' lanes the last round of fetches went to
        self._order: dict[PartitionKey, int] = {}  # each partition's place, which spreads partitions over lanes
        self._validations: dict[PartitionKey, asyncio.Task[tuple[int, int]]] = {}
        # The partitions to fetch, each in its lane, kept between rounds: a round looks only at the partitions
        # touched since the last one (answered, landed, held, released), so a task with thousands of quiet
        # partitions does not weigh each of them again for every fetch its few busy ones make.
        self._lane_of: dict[PartitionKey, FetchKey] = {}
        self._members: dict[FetchKey, dict[PartitionKey, None]] = {}
        self._touched: set[PartitionKey] = set()
        self._leaderless: set[PartitionKey] = set()  # looked at with no leader known: new metadata is asked for
        self._next_look = 0.0  # when every partition is looked at again
        self._looked_at: tuple[int, int] = (-1, -1)  # the fetcher's and the producer's changes at the last full look
        self._target_batch_bytes = int(spec.target_producer.get("batch.size", DEFAULT_TARGET_BATCH_BYTES))
        self._bound_per_lane = "buffer.memory" not in spec.target_producer  # unset: the bound grows with distance
        self._distance = 1  # the most lanes of a source leader this task fetches from, as of the last full look
        self._progress: list[tuple[SourceRecord, ProgressFailed]] = []

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
        for pending in [*self._fetches.values(), *self._validations.values()]:
            pending.cancel()
        if self.link is not None:
            await self.link.close()

    def assign(self, parts: dict[PartitionKey, PartitionCopy]) -> None:
        self.parts = parts
        self.fetching = {key: Fetching(part.position) for key, part in parts.items()}
        self._order = {key: index for index, key in enumerate(sorted(parts))}
        self._lane_of, self._members, self._touched, self._next_look = {}, {}, set(), 0.0
        self._leaderless, self._rotations = set(), {}

    def _touch(self, key: PartitionKey) -> None:
        """Something happened to `key` that may change whether and where it is fetched: the next round looks."""
        self._touched.add(key)

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
        """Kept until the commit's last one is written: a commit's progress records go out together, in batches
        of the same producer as the records (no second client for the target). One partition of one topic takes
        one batch per request, so a batch per record would write a commit of thousands of partitions at a few
        records per round trip."""
        self._progress.append(
            (SourceRecord(0, int(self.clock.now_ms or time.time() * 1000), key, value, ()), on_failure)
        )

    def _send_progress(self) -> None:
        """The progress records written since the last call, in batches of at most PROGRESS_BATCH_BYTES."""
        pending, self._progress = self._progress, []
        target = (self.spec.progress_topic, 0)
        group: list[tuple[SourceRecord, ProgressFailed]] = []
        size = 0
        for entry in pending:
            record = entry[0]
            record_bytes = len(record.key or b"") + len(record.value or b"") + PROGRESS_RECORD_OVERHEAD
            if group and size + record_bytes > PROGRESS_BATCH_BYTES:
                self._send_progress_batch(target, group)
                group, size = [], 0
            group.append(entry)
            size += record_bytes
        if group:
            self._send_progress_batch(target, group)

    def _send_progress_batch(self, target: PartitionKey, group: list[tuple[SourceRecord, ProgressFailed]]) -> None:
        payload = encode_records([record for record, _ in group], 0)
        note = _ProgressNote(tuple(on_failure for _, on_failure in group))
        self._link.producer.send(OutgoingBatch(target, payload, len(group), note))

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
        self._send_progress()
        self._link.producer.pump()

    async def settle(self, *, wait: bool) -> None:
        """Without `wait`, send what is queued; with it, until the target answered every batch sent."""
        self._send_progress()
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
            for lane, members in self._members.items()
            if members and lane not in fetches and now >= self._node_retry_at.get(lane[0], 0.0)
        }
        # each fetch may bring its share of the room, and never more than a part of the bound
        share = min(room // max(len(by_lane), 1), bound // FETCH_SHARE_OF_BUFFER)
        # Every partition in a fetch (none held, none without a leader): none waits for a fetch to answer before it
        # is fetched again, so the fetches may wait long on a quiet source; otherwise briefly, for the held ones.
        long_poll = len(self._lane_of) == len(self.parts)
        self._fetched_from = set(by_lane) | (set(fetches) if by_lane else set())
        for lane, members in by_lane.items():
            # A different partition first each time: only the first partition with data gets a batch larger than
            # max.partition.fetch.bytes whole, so a fixed order could starve a later partition's large batch.
            keys = list(members)
            self._rotations[lane] = self._rotations.get(lane, -1) + 1
            first = self._rotations[lane] % len(keys)
            positions = {key: self.fetching[key].position for key in keys[first:] + keys[:first]}
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
        return bound * self._distance if self._bound_per_lane else bound

    def _look(self, now: float) -> None:
        """Decide again which partitions are fetched, and in which lane: all of them after the metadata, a round
        trip or the target's readiness changed, and every LOOK_AGAIN_S in any case; otherwise only those touched
        since the last round."""
        seen = (self._link.fetcher.changes, self._link.producer.readiness_changes)
        keys: Iterable[PartitionKey]
        full = seen != self._looked_at or now >= self._next_look
        if full:
            self._looked_at, self._next_look = seen, now + LOOK_AGAIN_S
            keys, self._touched = list(self.parts), set()
        else:
            keys, self._touched = self._touched, set()
        leaders: set[int] = set()
        for key in keys:
            part = self.parts.get(key)
            lane = None if part is None else self._lane_now(part)
            if lane == NO_LEADER:
                self._leaderless.add(key)
                lane = None
            else:
                self._leaderless.discard(key)
                if full and lane is not None:
                    leaders.add(lane[0])
            self._place(key, lane)
        if leaders:  # (a full look with none fetchable, all held: the last distance stands)
            self._distance = max(self._link.fetcher.lanes(node) for node in leaders)
        if self._leaderless:
            self._refresh()  # (at most every REFRESH_EVERY_S)

    def _lane_now(self, part: PartitionCopy) -> FetchKey | None:
        """The lane `part` is fetched in now; None while it may not be fetched (held, as many batches waiting for
        the target as a partition may have, a target partition not taking batches yet, a leader epoch to check),
        NO_LEADER while its leader is unknown."""
        key, remote = part.work.key, part.work.remote_key
        producer = self._link.producer
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
        return (node, self._order.get(key, 0) % self._link.fetcher.lanes(node))

    def _place(self, key: PartitionKey, lane: FetchKey | None) -> None:
        old = self._lane_of.get(key)
        if old == lane:
            return
        if old is not None:
            del self._members[old][key]
        if lane is None:
            del self._lane_of[key]
        else:
            self._lane_of[key] = lane
            self._members.setdefault(lane, {})[key] = None

    # -- leader epochs (KIP-320) ------------------------------------------------------------------------
    def _epoch_checked(self, key: tuple[str, int]) -> bool:
        """True when the partition may be fetched: its position is known to be on the current leader's log.

        Under a newer leader epoch than the one last checked, the new leader is first asked where the epoch of
        the last fetched batch ends (nothing fetched yet: nothing to check)."""
        fetching, current = self.fetching[key], self._link.fetcher.epoch(key)
        if fetching.epoch == NO_EPOCH or current == NO_EPOCH or current <= fetching.validated:
            fetching.validated = max(fetching.validated, current)
            return True
        if key not in self._validations:
            self._validations[key] = asyncio.ensure_future(self._link.fetcher.epoch_end(key, fetching.epoch))
        return False

    def _take_validations(self) -> None:
        for key, check in list(self._validations.items()):
            if not check.done():
                continue
            del self._validations[key]
            self._touch(key)  # answered or not, whether it may be fetched is decided again
            part, fetching = self.parts.get(key), self.fetching.get(key)
            if part is None or fetching is None:
                continue
            try:
                error, end_offset = check.result()
                answered = not error
            except KafkaOperationError:
                answered = False
            if not answered:  # an epoch the leader does not know yet, a leader that moved again, a lost
                # connection: ask again after new metadata
                self.read_errors += 1
                self._refresh()
                continue
            fetching.validated = self._link.fetcher.epoch(key)
            if 0 <= end_offset < fetching.position:
                self._diverged(part, fetching, end_offset)

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
        self._touched.update(fetched)
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
        for group in self._groups(part, fetching, due):
            sent = self._send(part, fetching, group[0]) if len(group) == 1 else self._merge(part, group)
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
        self._stop_at(part, fetching, offset)

    def _groups(self, part: PartitionCopy, fetching: Fetching, batches: list[SourceBatch]) -> list[list[SourceBatch]]:
        """`batches` in order, mergeable ones that follow each other without a gap merged in groups; the rest alone."""
        limit = min(part.work.max_record_bytes or MERGED_BATCH_BYTES, MERGED_BATCH_BYTES)
        pairs_below = min(limit, self._target_batch_bytes) // 2  # uncompressed batches two of which fit batch.size
        groups: list[list[SourceBatch]] = []
        size, merging = 0, False
        for batch in batches:
            small = self._mergeable(part, fetching, batch, pairs_below)
            last = groups[-1][-1] if groups else None
            if (
                merging
                and small
                and last is not None
                and batch.base_offset == last.next_offset
                and batch.compression == last.compression
                and size + len(batch.raw) <= limit
            ):
                groups[-1].append(batch)
                size += len(batch.raw)
            else:
                groups.append([batch])
                size, merging = len(batch.raw), small
        return groups

    @staticmethod
    def _mergeable(part: PartitionCopy, fetching: Fetching, batch: SourceBatch, pairs_below: int) -> bool:
        """A batch that could be forwarded as it is, small (few records and bytes) or uncompressed and at most
        `pairs_below` bytes: merging it with its neighbours keeps offsets exact."""
        small = batch.count < SMALL_BATCH_RECORDS and len(batch.raw) < SMALL_BATCH_BYTES
        fits_twice = batch.compression == 0 and len(batch.raw) <= pairs_below
        return (
            (small or fits_twice)
            and batch.base_offset >= fetching.position
            and batch.why_not_forwardable(fetching.position) is None
            and batch.base_offset > fetching.one_by_one_until
            and (part.held_at is None or batch.last_offset < part.held_at)
        )

    def _merge(self, part: PartitionCopy, group: list[SourceBatch]) -> bool:
        """Send consecutive small batches as one, re-encoded in their codec (one by one if too large for the target)."""
        records = [record for batch in group for record in records_of(batch)]
        encoded = encode_records(records, group[0].compression)
        limit = part.work.max_record_bytes
        if limit is not None and len(encoded) > limit:
            return all(self._send(part, self.fetching[part.work.key], batch) for batch in group)
        for batch in group:
            self._count(part, batch)
        upstream = range(group[0].base_offset, group[-1].last_offset + 1)
        self._queue(part, encoded, upstream, max(batch.max_timestamp for batch in group))
        return True

    def _send(self, part: PartitionCopy, fetching: Fetching, batch: SourceBatch) -> bool:
        """Queue `batch` for the target, as it is or re-encoded; False when the partition stops in it (a record
        the target refuses, or a refusal an earlier task committed whose retry is not due yet)."""
        limit = part.work.max_record_bytes
        held = part.held_at is not None and batch.last_offset >= part.held_at
        one_by_one = batch.base_offset <= fetching.one_by_one_until
        reason = batch.why_not_forwardable(fetching.position)
        if reason is None and held:
            reason = "stops at a refused record"
        if reason is None and one_by_one:
            reason = "after a refusal, record by record"
        if reason is None and limit is not None and len(batch.raw) > limit:
            reason = f"batch of {len(batch.raw)} bytes is larger than max.message.bytes={limit}"
        self._count(part, batch)
        if reason is None:
            upstream = range(batch.base_offset, batch.last_offset + 1)
            self._queue(part, for_target(batch, -1, -1, -1), upstream, batch.max_timestamp)
            part.forwarded += batch.count
            return True
        part.reencoded_reason = reason
        records = records_of(batch, fetching.position)
        if held:
            assert part.held_at is not None
            records = [record for record in records if record.offset < part.held_at]
        if not one_by_one and records:
            encoded = encode_records(records, batch.compression)
            if limit is None or len(encoded) <= limit:
                self._queue(part, encoded, [r.offset for r in records], _newest(records))
                records = []
        for record in records:  # one per batch: the batch is too large, or the target refused it as a whole
            encoded = encode_records([record], batch.compression)
            if limit is not None and len(encoded) > limit:
                size, where = len(encoded), part.work.remote_topic
                part.refuse(
                    record.offset, f"record of {size} bytes is larger than max.message.bytes={limit} of {where}"
                )
                self._stop_at(part, fetching, record.offset)
                return False
            self._queue(part, encoded, [record.offset], _newest([record]))
        if held:
            assert part.held_at is not None
            self._stop_at(part, fetching, part.held_at)
            return False
        return True

    def _stop_at(self, part: PartitionCopy, fetching: Fetching, offset: int) -> None:
        self.hold(part)
        fetching.position = offset

    def _count(self, part: PartitionCopy, batch: SourceBatch) -> None:
        part.records += batch.count
        part.bytes += max(len(batch.raw) - RECORD_BATCH_OVERHEAD, 0)
        self.records += batch.count
        if batch.max_timestamp < 0:
            return  # message format v0: no timestamps, no age
        age = self.clock.now_ms - batch.max_timestamp
        part.age_ms_sum += age * batch.count
        if age > part.age_ms_max:
            part.age_ms_max = age

    def _queue(self, part: PartitionCopy, payload: TargetBatch, upstream: Sequence[int], newest_ms: float) -> None:
        part.in_flight.append(upstream[0])
        note = (part, upstream, newest_ms)
        self._link.producer.send(OutgoingBatch(part.work.remote_key, payload, len(upstream), note))

    def _fetch_error(self, part: PartitionCopy, fetching: Fetching, code: int) -> None:
        """A partition's fetch answered with an error (`error_classes` says what it is about)."""
        kind = error_class(code)
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
            if low is None or high is None or low <= fetching.position <= high:
                continue  # not known, or no longer out of range (a leader caught up): the next fetch tells
            resume = part.skip_out_of_range(fetching.position, low, high, to_latest=self.spec.reset_to_latest)
            if resume < fetching.position:
                self.hold(part)  # a reset backwards: fetched again once in flight answered (`_rewind_diverged`)
            fetching.position = resume

    # -- what the target answered -----------------------------------------------------------------------
    def _take_landed(self) -> None:
        for landed in self._link.producer.take_landed():
            if isinstance(landed.batch.note, _ProgressNote):
                self._progress_landed(landed, landed.batch.note)
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

    def _progress_landed(self, landed: Landed, note: _ProgressNote) -> None:
        """A progress record not written fails the task at its next commit (its partition is copied again)."""
        if landed.outcome is Outcome.ACKNOWLEDGED:
            return
        if landed.outcome is Outcome.REFUSED:
            self._link.producer.resume(landed.batch.key)
        for on_failure in note.on_failure:
            on_failure(landed.message or landed.outcome.value)

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
