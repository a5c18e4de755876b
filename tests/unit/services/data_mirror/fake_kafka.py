"""In-memory stand-ins for the clients a copy task is given: enough of confluent-kafka's surface for task logic.

Not a broker: no network, no protocol. A `FakeCluster` keeps per-partition logs; the producer appends to them
when it delivers (in `poll`/`flush`), in order, with transactions that commit or vanish as Kafka's do for a
read_committed reader.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from services.data_mirror.task_clients import TaskClients
from shared.records import OffsetSync
from shared.records.offset_sync import SYNC_SEGMENT_HEADER, SyncSegment
from shared.records.progress import Progress, ProgressKey, decode_progress_record


@dataclass
class Record:
    """One record in a fake log."""

    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: list[tuple[str, bytes]] | None = None
    committed: bool = True
    corrupt: bool = False  # its batch fails the consumer's CRC check
    key_not_utf8: bool = False  # a header key confluent-kafka cannot decode (it takes keys for UTF-8 text)


class FakeMessage:
    """What consume() and delivery callbacks hand out."""

    def __init__(
        self,
        topic: str,
        partition: int,
        offset: int,
        record: Record,
        error: Any = None,
        leader_epoch: int | None = None,
    ) -> None:
        self._topic, self._partition, self._offset, self._record, self._error = topic, partition, offset, record, error
        self._leader_epoch = leader_epoch

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def key(self) -> bytes | None:
        return self._record.key

    def value(self) -> bytes | None:
        return self._record.value

    def headers(self) -> list[tuple[str, bytes]] | None:
        if self._record.key_not_utf8:  # as confluent-kafka 2.16 fails: its C code returns with the error set
            cause = UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")
            raise SystemError(
                "<method 'headers' of 'cimpl.Message' objects> returned a result with an exception set"
            ) from cause
        return self._record.headers

    def timestamp(self) -> tuple[int, int]:
        return (1, self._record.timestamp)

    def error(self) -> Any:
        return self._error

    def leader_epoch(self) -> int | None:
        return self._leader_epoch


@dataclass
class FakeCluster:
    """Partition logs by (topic, partition)."""

    logs: dict[tuple[str, int], list[Record]] = field(default_factory=dict)

    def log(self, topic: str, partition: int) -> list[Record]:
        return self.logs.setdefault((topic, partition), [])

    def committed(self, topic: str, partition: int) -> list[Record]:
        """What a read_committed consumer sees."""
        return [r for r in self.log(topic, partition) if r.committed]


class FakeConsumer:
    """assign/consume/poll/pause/resume/seek/position over a FakeCluster's logs."""

    def __init__(self, cluster: FakeCluster) -> None:
        self.cluster = cluster
        self.positions: dict[tuple[str, int], int] = {}
        self.paused: set[tuple[str, int]] = set()
        self.errors: list[FakeMessage] = []  # returned by the next consume, before any record
        self.leader_epoch: int | None = None  # reported with each position, as librdkafka does (KIP-320)
        self.corrupt_reads = 0  # how often a batch failing its CRC check was read

    def assign(self, tps: list[TopicPartition]) -> None:
        self.positions = {(tp.topic, tp.partition): tp.offset for tp in tps}

    def incremental_assign(self, tps: list[TopicPartition]) -> None:
        self.positions |= {(tp.topic, tp.partition): tp.offset for tp in tps}

    def incremental_unassign(self, tps: list[TopicPartition]) -> None:
        for tp in tps:
            self.positions.pop((tp.topic, tp.partition), None)

    def consume(self, num_messages: int, timeout: float) -> list[FakeMessage]:
        out, self.errors = self.errors, []
        reported = {(m.topic(), m.partition()) for m in out}
        for key, position in list(self.positions.items()):
            if key in self.paused or key in reported:
                continue
            log = self.cluster.log(*key)
            if position > len(log):  # auto.offset.reset=error: reported, and the partition is no longer fetched
                reset = KafkaError(KafkaError._AUTO_OFFSET_RESET, f"offset {position} out of range", fatal=False)
                out.append(FakeMessage(key[0], key[1], position, Record(None, None, 0, None), error=reset))
                del self.positions[key]
                continue
            while position < len(log) and len(out) < num_messages:
                if log[position].corrupt:
                    self._corrupt_batch(key, position, out)
                    break
                out.append(FakeMessage(key[0], key[1], position, log[position], leader_epoch=self.leader_epoch))
                position += 1
            else:
                self.positions[key] = position
        return out

    def _corrupt_batch(self, key: tuple[str, int], position: int, out: list[FakeMessage]) -> None:
        """What librdkafka 2.16 reports for a batch failing its CRC check, as measured against a real broker, all in
        one consume call once its fetches are done: the CRC error; then, reading on from inside the damaged batch,
        an unsupported batch at a garbage offset, where it moves its fetch position; then that offset out of range
        (auto.offset.reset=error), after which it no longer fetches the partition."""
        self.corrupt_reads += 1
        blank = Record(None, None, 0, None)
        garbage = 92363409141044
        for offset, code, what in (
            (position, KafkaError._BAD_MSG, f"MessageSet at offset {position} failed CRC32C check"),
            (garbage, KafkaError._NOT_IMPLEMENTED, f"Unsupported Message(Set) MagicByte 49 at offset {garbage}"),
            (garbage + 1, KafkaError._AUTO_OFFSET_RESET, "Broker: Offset out of range"),
        ):
            out.append(FakeMessage(key[0], key[1], offset, blank, error=KafkaError(code, what, fatal=False)))
        del self.positions[key]

    def poll(self, timeout: float) -> FakeMessage | None:
        found = self.consume(1, timeout)
        return found[0] if found else None

    def pause(self, tps: list[TopicPartition]) -> None:
        self.paused |= {(tp.topic, tp.partition) for tp in tps}

    def resume(self, tps: list[TopicPartition]) -> None:
        self.paused -= {(tp.topic, tp.partition) for tp in tps}

    def seek(self, tp: TopicPartition) -> None:
        key = (tp.topic, tp.partition)
        if key not in self.positions:  # librdkafka after an out-of-range report: no longer fetched, no seek
            raise KafkaException(KafkaError(KafkaError._STATE, f"Failed to seek to offset {tp.offset}", fatal=False))
        self.positions[key] = tp.offset

    def position(self, tps: list[TopicPartition]) -> list[TopicPartition]:
        epoch = -1 if self.leader_epoch is None else self.leader_epoch
        # a partition no longer fetched (after an out-of-range report) has no position, as librdkafka answers
        at = {key: self.positions.get(key, -1001) for key in ((tp.topic, tp.partition) for tp in tps)}
        return [TopicPartition(*key, offset, leader_epoch=epoch) for key, offset in at.items()]

    def get_watermark_offsets(self, tp: TopicPartition, cached: bool = False) -> tuple[int, int]:
        return (0, len(self.cluster.log(tp.topic, tp.partition)))

    def close(self) -> None:
        pass


class FakeProducer:
    """Idempotent (ordered) producer; transactional when `transactional`; `refuse(record)` names refused records."""

    def __init__(
        self,
        cluster: FakeCluster,
        *,
        transactional: bool = False,
        refuse: Callable[[Record], bool] = lambda record: False,
        on_delivery: Callable[..., None] | None = None,
    ) -> None:
        self.cluster = cluster
        self.transactional = transactional
        self.refuse = refuse
        self.default_delivery = on_delivery
        self.queue: list[tuple[str, int, Record, Callable[..., None] | None]] = []
        self.open: list[Record] = []
        self.in_transaction = False
        self.fail_next_commit_after_committing = False
        self.commits = 0

    def produce(self, topic: str, value: Any = None, key: Any = None, **kwargs: Any) -> None:
        if self.transactional and not self.in_transaction:
            raise KafkaException(KafkaError(KafkaError._STATE, "produce outside a transaction"))
        record = Record(key, value, kwargs.get("timestamp", 0), kwargs.get("headers"), committed=not self.transactional)
        callback = kwargs.get("on_delivery") or self.default_delivery
        self.queue.append((topic, kwargs.get("partition", 0), record, callback))

    def poll(self, timeout: float = 0) -> int:
        delivered, self.queue = self.queue, []
        for topic, partition, record, callback in delivered:
            if self.refuse(record):
                error = KafkaError(KafkaError.MSG_SIZE_TOO_LARGE, "too large", fatal=False, retriable=False)
                if callback:
                    callback(error, FakeMessage(topic, partition, -1, record))
                continue
            log = self.cluster.log(topic, partition)
            log.append(record)
            if self.transactional:
                self.open.append(record)
            if callback:
                callback(None, FakeMessage(topic, partition, len(log) - 1, record))
        return len(delivered)

    def flush(self, timeout: float = 0) -> int:
        self.poll()
        return 0

    def __len__(self) -> int:
        return len(self.queue)

    def begin_transaction(self) -> None:
        self.in_transaction = True

    def commit_transaction(self, timeout: float = 0) -> None:
        self.flush()
        for record in self.open:
            record.committed = True
        self.open, self.in_transaction = [], False
        self.commits += 1
        if self.fail_next_commit_after_committing:
            self.fail_next_commit_after_committing = False
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "commit timed out (but it committed)"))

    def abort_transaction(self, timeout: float = 0) -> None:
        self.queue = []
        for record in self.open:
            record.committed = False  # aborted: a read_committed reader never sees it
        self.open, self.in_transaction = [], False


def read_progress(cluster: FakeCluster, topic: str, flow: str) -> dict[tuple[str, int], Progress]:
    """What load_progress reads: the latest committed value per key of `flow`."""
    progress: dict[tuple[str, int], Progress] = {}
    for record in cluster.committed(topic, 0):
        assert record.key is not None
        assert record.value is not None
        key = ProgressKey.decode(record.key)
        if key.flow == flow:
            progress[(key.topic, key.partition)] = decode_progress_record(record.value)
    return progress


def offset_syncs(cluster: FakeCluster, topic: str) -> list[tuple[OffsetSync, SyncSegment]]:
    """The offset syncs written to `topic`, in order, each with its segment (which stretch of copying it is in)."""
    found = []
    for record in cluster.committed(topic, 0):
        assert record.key is not None
        assert record.value is not None
        segment = SyncSegment.decode(dict(record.headers or [])[SYNC_SEGMENT_HEADER])
        found.append((OffsetSync.decode(record.key, record.value), segment))
    return found


def fake_clients(
    cluster: FakeCluster,
    producer: FakeProducer,
    *,
    progress_topic: str,
    flow: str,
    handover: Callable[[], bool],
) -> TaskClients:
    """TaskClients over the fake cluster; the sync producer writes to the same cluster."""
    consumer = FakeConsumer(cluster)

    def bounds(keys: list[tuple[str, int]]) -> tuple[dict[tuple[str, int], int], dict[tuple[str, int], int]]:
        return {key: 0 for key in keys}, {key: len(cluster.log(*key)) for key in keys}

    return TaskClients(
        consumer=consumer,
        producer=producer,
        sync_producer=FakeProducer(cluster),
        load_progress=lambda: read_progress(cluster, progress_topic, flow),
        offset_bounds=bounds,
        handover_requested=handover,
        close=lambda: None,
    )
