"""Stand-ins for a batch-forwarding task's two clusters, and the `TaskClients` that open a `BatchLink` to them.

`FakeSource` answers the batch copier as its fetcher (`shared.kafka.batch_fetcher.BatchFetcher`) would, from
record batches as a broker stores them; `FakeTarget` answers the real `BatchProducer` as brokers with Kafka's
sequence checks would (`test_batch_producer._Broker`, one per partition), and keeps what each partition wrote.
Tests reach the copier and the task loop only through their public entry points: `TaskClients.open_batch_link`
hands them the link, `task_entry.task_loop(spec, clients).run()` runs a whole task, and `open_copier` gives a copier
that tests step (`step`, `settle`, `hold`, `release`, `positions`, `write_progress`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import struct
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from aiokafka.protocol.offset import OffsetRequest
from aiokafka.record.default_records import DefaultRecord, DefaultRecordBatch, DefaultRecordBatchBuilder
from aiokafka.record.util import calc_crc32c

from services.data_mirror.batch_copy import BatchCopier
from services.data_mirror.partition_copy import Clock, PartitionCopy
from services.data_mirror.sync_rules import SyncTracker
from services.data_mirror.task_clients import TaskClients
from services.data_mirror.task_entry import task_loop
from services.data_mirror.work import TaskResult, TaskSpec
from shared.kafka.batch_fetcher import PartitionFetch
from shared.kafka.batch_link import BatchLink
from shared.kafka.batch_producer import DEFAULT_BUFFER_BYTES, BatchProducer
from shared.kafka.error_codes import NOT_LEADER_OR_FOLLOWER, OFFSET_OUT_OF_RANGE
from shared.kafka.record_batches import TargetBatch, read_batches
from shared.partition_key import PartitionKey
from shared.records.progress import Progress, ProgressKey, decode_progress_record
from shared.retry import Backoff
from tests.unit.services.data_mirror.fake_kafka import FakeCluster, FakeProducer
from tests.unit.services.data_mirror.test_copy_task import FLOW, PROGRESS, _spec, _until
from tests.unit.shared.kafka.test_batch_producer import _Broker, _Cluster

KEY = ("orders", 0)
REMOTE = "A.orders"
LEADER = 1  # the source broker that leads every partition
QUIET_WAIT_S = 0.01  # how long a fetch with nothing to answer waits (a broker's fetch.max.wait.ms, shortened)

Headers = list[tuple[str, bytes | None]]


def stored(base: int, records: list[tuple[bytes | None, Headers]], *, leader_epoch: int = -1) -> bytes:
    """A v2 batch at `base` as a broker stores it: record `i` is key `k<base+i>` with the given value and headers,
    stamped with the partition leader epoch it was written under."""
    builder = DefaultRecordBatchBuilder(2, 0, 0, -1, -1, -1, 1 << 20)
    for delta, (value, headers) in enumerate(records):
        builder.append(delta, 1_000 + base + delta, f"k{base + delta}".encode(), value, headers)
    raw = bytearray(builder.build())
    struct.pack_into(">q", raw, 0, base)
    struct.pack_into(">i", raw, 12, leader_epoch)  # outside the CRC, as the leader stamps it
    struct.pack_into(">I", raw, 17, calc_crc32c(bytes(raw[21:])))
    return bytes(raw)


def damaged(raw: bytes) -> bytes:
    """`raw` with one bit of its last byte flipped: its checksum no longer matches."""
    out = bytearray(raw)
    out[-1] ^= 0x01
    return bytes(out)


def keys(first: int, end: int) -> list[bytes | None]:
    """The keys of the records at offsets [first, end) of a log written by `stored` or `test_record_batches._batch`."""
    return [f"k{offset}".encode() for offset in range(first, end)]


# -- the source -----------------------------------------------------------------------------------------------
@dataclasses.dataclass
class SourceLog:
    """One source partition: its record batches as stored, holding offsets [start, end)."""

    batches: bytes
    end: int
    start: int = 0


@dataclasses.dataclass(frozen=True)
class FetchAsked:
    """One fetch the copier made: the positions it named, in which lane, and whether it might wait long."""

    positions: dict[PartitionKey, int]
    lane: int
    long_poll: bool


class FakeSource:
    """The source as the batch copier's fetcher: one leader for every partition, fetched in `lanes` sessions at once.

    A fetch answers, as an incremental fetch session does, only the partitions with records or news (an error, a
    new end): a position inside the log gets the log's batches (the copier skips those before it), one outside it
    OFFSET_OUT_OF_RANGE. Answers are what the log held when the fetch was asked; a fetch takes `round_trip_s`."""

    def __init__(
        self, logs: Mapping[PartitionKey, bytes] | None = None, *, round_trip_s: float = 0.001, lanes: int = 1
    ) -> None:
        self.logs = {key: SourceLog(batches, _end_of(batches)) for key, batches in (logs or {}).items()}
        self.round_trip_s = round_trip_s
        self.lanes_of = {LEADER: lanes}  # fetch sessions at once per broker (more for a distant one)
        self.changes = 0  # metadata updates, as the fetcher counts them
        self.epochs: dict[PartitionKey, int] = {}  # each partition's current leader epoch (absent: not known)
        self.epoch_ends: dict[tuple[PartitionKey, int], int] = {}  # where the leader says an epoch ends
        self.epochs_asked: list[int] = []
        self.fetches: list[FetchAsked] = []
        self.bounds_asked: list[list[PartitionKey]] = []
        self.in_flight = self.most_in_flight = 0
        self.bytes_asked = self.most_bytes_asked = 0  # the size limits of the fetches under way at once
        self.closed = False
        self._reported_end: dict[PartitionKey, int] = {}

    def put(self, key: PartitionKey, batches: bytes, *, start: int = 0) -> None:
        """The partition's log is now `batches`, from `start` (written, made again, or truncated)."""
        self.logs[key] = SourceLog(batches, _end_of(batches, start), start)

    def elect(self, key: PartitionKey, epoch: int, batches: bytes, ends: Mapping[int, int]) -> None:
        """A new leader under `epoch` whose log is `batches`; it says each earlier epoch ends where `ends` says."""
        self.put(key, batches)
        self.epochs[key] = epoch
        self.epoch_ends.update({(key, earlier): end for earlier, end in ends.items()})
        self.changes += 1

    def log_of(self, key: PartitionKey) -> SourceLog:
        """The partition's log (an empty one for a partition never written)."""
        return self.logs.get(key) or SourceLog(b"", 0)

    # what the copier asks of its fetcher
    def leader(self, _key: PartitionKey) -> int:
        return LEADER

    def lanes(self, node: int) -> int:
        return self.lanes_of.get(node, 1)

    def knows(self, _topic: str) -> bool:
        return True

    def epoch(self, key: PartitionKey) -> int:
        return self.epochs.get(key, -1)

    async def epoch_end(self, key: PartitionKey, epoch: int) -> tuple[int, int]:
        self.epochs_asked.append(epoch)
        return 0, self.epoch_ends[(key, epoch)]

    async def refresh(self) -> None:
        pass

    async def fetch(
        self, _node: int, positions: Mapping[PartitionKey, int], limit: int, lane: int = 0, *, long_poll: bool = False
    ) -> dict[PartitionKey, PartitionFetch]:
        self.fetches.append(FetchAsked(dict(positions), lane, long_poll))
        answers = {key: found for key, at in positions.items() if (found := self._answer(key, at)) is not None}
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        self.bytes_asked += limit
        self.most_bytes_asked = max(self.most_bytes_asked, self.bytes_asked)
        try:
            await asyncio.sleep(self.round_trip_s if answers else max(self.round_trip_s, QUIET_WAIT_S))
        finally:
            self.in_flight -= 1
            self.bytes_asked -= limit
        return answers

    def _answer(self, key: PartitionKey, position: int) -> PartitionFetch | None:
        log = self.log_of(key)
        if not log.start <= position <= log.end:
            return PartitionFetch(position, OFFSET_OUT_OF_RANGE, -1, -1, 0, [], b"")
        if position == log.end and self._reported_end.get(key) == log.end:
            return None  # nothing new: an incremental session leaves the partition out
        self._reported_end[key] = log.end
        return PartitionFetch(position, 0, log.end, log.end, log.start, [], log.batches if position < log.end else b"")

    async def close(self) -> None:
        self.closed = True

    # what the task loop asks of its admin client
    def offset_bounds(self, asked: list[PartitionKey]) -> tuple[dict[PartitionKey, int], dict[PartitionKey, int]]:
        self.bounds_asked.append(list(asked))
        return {key: self.log_of(key).start for key in asked}, {key: self.log_of(key).end for key in asked}


def _end_of(batches: bytes, start: int = 0) -> int:
    found = read_batches(batches)
    return found[-1].next_offset if found else start


# -- the target -----------------------------------------------------------------------------------------------
class TargetLog(_Broker):
    """One target partition: the broker's sequence check, and the records and batches it wrote, in log order.
    `script` forces the answer to its next Produce."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[DefaultRecord] = []
        self.batches: list[bytes] = []

    @property
    def keys(self) -> list[bytes | None]:
        return [record.key for record in self.records]

    @property
    def batch_sizes(self) -> list[int]:
        """How many records each batch it wrote held."""
        return [len(list(DefaultRecordBatch(batch))) for batch in self.batches]

    def answer(self, payload: TargetBatch) -> tuple[int, int]:
        before = len(self.log)
        error, offset = super().answer(payload)
        if error == 0 and len(self.log) > before:
            self.batches.append(bytes(payload))
            self.records += list(DefaultRecordBatch(bytes(payload)))
        return error, offset


class FakeTarget:
    """The target cluster as the batch producer meets it: a `TargetLog` per partition. The leader of a partition in
    `missing` has not taken it up yet (NOT_LEADER_OR_FOLLOWER to probes and Produce) until `create`."""

    def __init__(self, *, missing: set[PartitionKey] | None = None) -> None:
        self.logs: dict[PartitionKey, TargetLog] = {}
        self.missing = set(missing or ())
        self.produced = 0  # Produce requests answered
        self.cluster = _Cluster()
        self.closed = False

    def log(self, topic: str = REMOTE, partition: int = 0) -> TargetLog:
        return self.logs.setdefault((topic, partition), TargetLog())

    def keys(self, partition: int = 0) -> list[bytes | None]:
        """The keys the remote topic's `partition` holds, in log order."""
        return self.log(REMOTE, partition).keys

    def create(self, key: PartitionKey) -> None:
        self.missing.discard(key)

    def progress(self, key: PartitionKey = KEY) -> list[Progress]:
        """Every progress record written for source partition `key`, in order."""
        return [progress for written, progress in self._progress_records() if written == key]

    def waited_at(self, offset: int, reason: str, key: PartitionKey = KEY) -> bool:
        """True once a progress record of `key` said it stands at `offset`, waiting there because of `reason`."""
        return any(
            (p.next_offset, p.report.blocked_offset) == (offset, offset) and reason in (p.report.blocked_reason or "")
            for p in self.progress(key)
            if p.report is not None
        )

    def blocked(self, key: PartitionKey = KEY) -> list[Progress]:
        """The progress records of `key` that report it waiting at a record."""
        return [p for p in self.progress(key) if p.report is not None and p.report.blocked_offset is not None]

    def went_back(self, reset_from: int, reset_to: int, key: PartitionKey = KEY) -> bool:
        """True once a progress record of `key` reported that copying went back from `reset_from` to `reset_to`."""
        return any(
            p.report is not None and (p.report.reset_from, p.report.reset_to) == (reset_from, reset_to)
            for p in self.progress(key)
        )

    def reported(self, count: str, key: PartitionKey = KEY) -> int:
        """The total of one count of the reports in `key`'s progress records (each counts since the last)."""
        return sum(getattr(p.report, count) for p in self.progress(key) if p.report is not None)

    def committed(self) -> dict[PartitionKey, Progress]:
        """What a task reads at its start: the latest progress per partition."""
        return dict(self._progress_records())

    def _progress_records(self) -> Iterator[tuple[PartitionKey, Progress]]:
        for record in self.log(PROGRESS, 0).records:
            written = ProgressKey.decode(bytes(record.key or b""))
            if written.flow == FLOW and record.value is not None:
                yield (written.topic, written.partition), decode_progress_record(bytes(record.value))

    async def send(self, _node: int, request: Any) -> Any:
        await asyncio.sleep(0)
        probe = isinstance(request, OffsetRequest)
        self.produced += not probe
        answers = []
        for topic, parts in request._topics:
            answered: list[tuple[int, ...]] = []
            for partition, payload in parts:
                key, log = (topic, partition), self.log(topic, partition)
                if probe:
                    answered.append(
                        (partition, NOT_LEADER_OR_FOLLOWER if key in self.missing else 0, -1, log.next_offset)
                    )
                elif key in self.missing:
                    answered.append((partition, NOT_LEADER_OR_FOLLOWER, -1))
                else:
                    answered.append((partition, *log.answer(payload)))
            answers.append((topic, answered))
        return type("Response", (), {"topics": answers})()

    def force_metadata_update(self) -> None:
        pass

    async def close(self) -> None:
        self.closed = True


# -- the task's clients, a task, a copier ----------------------------------------------------------------------
def batch_spec(partitions: int = 1, *, max_record_bytes: int | None = 1_000_000, **changes: Any) -> TaskSpec:
    """A batch-forwarding task of `partitions` partitions of "orders" (`test_copy_task._spec`: a commit every
    50 ms); `changes`: more of its TaskSpec (transforms, target_producer, blocked_retry_s, ...)."""
    spec = _spec(partitions)
    works = tuple(dataclasses.replace(work, max_record_bytes=max_record_bytes) for work in spec.partitions)
    return dataclasses.replace(spec, partitions=works, copy_batches=True, **changes)


def batch_clients(
    spec: TaskSpec,
    source: FakeSource,
    target: FakeTarget,
    *,
    handover: Callable[[], bool] = lambda: False,
    committed: Mapping[PartitionKey, Progress] | None = None,
    syncs: FakeCluster | None = None,
) -> TaskClients:
    """The clients of a batch-forwarding task between `source` and `target`: its link opens a real `BatchProducer`
    in front of `target` (with the spec's `buffer.memory`); progress is read from `target` unless `committed`
    gives it; offset syncs go to `syncs` (none are written without it)."""

    async def open_link() -> BatchLink:
        buffer_bytes = int(spec.target_producer.get("buffer.memory", DEFAULT_BUFFER_BYTES))
        producer = BatchProducer(
            target,
            request_timeout_ms=1_000,
            delivery_timeout_s=30,
            retry_backoff=Backoff(first_s=0.01, max_s=0.02),
            buffer_bytes=buffer_bytes,
        )
        producer.producer_id, producer.producer_epoch = 7, 0  # as `start` takes them from the target
        return BatchLink(source, producer, read_committed=False)  # type: ignore[arg-type]

    return TaskClients(
        consumer=None,
        producer=None,
        sync_producer=None if syncs is None else FakeProducer(syncs),
        load_progress=lambda: dict(committed) if committed is not None else target.committed(),
        offset_bounds=source.offset_bounds,
        handover_requested=handover,
        close=lambda: None,
        open_batch_link=open_link,
    )


def run_task(
    spec: TaskSpec,
    source: FakeSource,
    target: FakeTarget,
    until: Callable[[], bool],
    *,
    committed: Mapping[PartitionKey, Progress] | None = None,
    syncs: FakeCluster | None = None,
) -> TaskResult:
    """A whole batch-forwarding task (`task_entry.task_loop`) between `source` and `target`, handed over once
    `until()` holds (or after a few seconds, so a broken task cannot hang the test)."""
    clients = batch_clients(spec, source, target, handover=_until(until), committed=committed, syncs=syncs)
    return task_loop(spec, clients).run()


async def open_copier(spec: TaskSpec, source: FakeSource, target: FakeTarget, *, at: int = 0) -> BatchCopier:
    """A batch copier of `spec`'s partitions, opened over `source` and `target` and copying each from `at`."""
    copier = BatchCopier(spec, batch_clients(spec, source, target), Clock(spec.blocked_retry_s))
    await copier.open()
    copier.assign(
        {
            work.key: PartitionCopy(work, None, at, SyncTracker(spec.offset_lag_max), copier.clock)
            for work in spec.partitions
        }
    )
    return copier


async def steps_until(copier: BatchCopier, done: Callable[[], bool], rounds: int) -> None:
    """Step the copier until `done()` or `rounds` steps passed (the caller asserts what it waited for)."""
    for _ in range(rounds):
        await copier.step()
        if done():
            return
