"""Read one partition for the verifier as blocks: its record batches, fetched raw and read_committed, each digested
only when the comparison asks (a forwarded copy of a source batch never is: `record_digests`).

Batches come through the batch path's Fetch client (`BatchFetcher`), run on an event loop in a thread of the
reader's own, so the reader serves plain threads (the audit's rounds) and callers inside a running loop alike; the
next fetch is under way while a fetched one is compared. Aborted transactions and control batches are left out as a
read_committed consumer leaves them out (`CommittedFilter`). Topics, partitions and offsets by time come from a
confluent-kafka consumer that reads no records.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Coroutine, Generator, Mapping
from concurrent.futures import Future
from typing import Any, TypeVar

from confluent_kafka import Consumer, TopicPartition

from shared.errors import KafkaOperationError
from shared.kafka.batch_fetcher import BatchFetcher, PartitionFetch
from shared.kafka.client_names import client_id
from shared.kafka.error_classes import ErrorClass, error_class, error_name
from shared.kafka.error_codes import OFFSET_OUT_OF_RANGE
from shared.kafka.factories import aio_client, confluent_consumer
from shared.kafka.record_batches import CommittedFilter, read_batches
from shared.kafka.record_digests import BatchBlock, ReadCounter

__all__ = ["BatchBlock", "PartitionEntries", "ReadCounter", "ReadStalled"]

_METADATA_SETTINGS = {"group.id": "strait-verify", "enable.auto.commit": False}
FETCH_MAX_BYTES = 64 * 2**20
PARTITION_FETCH_BYTES = 16 * 2**20
FETCH_WAIT_MS = 10  # the broker answers at once at a partition's end: partitions are read one by one
RETRY_WAIT_S = 0.1  # after a failed fetch (no leader known, a leader moved): new metadata, then again

T = TypeVar("T")


class ReadStalled(TimeoutError):
    """A partition did not reach its end offset in time, or its range is no longer on the cluster."""


def _mended_by_metadata(code: int) -> bool:
    """A fetch error that new metadata and another fetch may mend (a leader moved, a topic not known yet)."""
    return bool(code) and error_class(code, reading=True) in (ErrorClass.RETRY, ErrorClass.TOPIC_GONE)


class _LoopThread:
    """An event loop running in a daemon thread of its own; coroutines are handed to it from any thread."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def submit(self, work: Coroutine[Any, Any, T]) -> Future[T]:
        return asyncio.run_coroutine_threadsafe(work, self.loop)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self.loop.close()


class PartitionEntries:
    """One cluster's reader, reused for partition after partition (one at a time)."""

    def __init__(self, props: Mapping[str, str], *, timeout_s: float) -> None:
        self._props = dict(props)
        self._consumer: Consumer = confluent_consumer(props, **_METADATA_SETTINGS)
        self._timeout_s = timeout_s
        self._loop: _LoopThread | None = None
        self._fetcher: BatchFetcher | None = None
        self.counter = ReadCounter()

    def offset_at(self, topic: str, partition: int, timestamp_ms: int) -> int | None:
        """The first offset whose timestamp is at or after `timestamp_ms`; None past the end."""
        found = self._consumer.offsets_for_times([TopicPartition(topic, partition, timestamp_ms)], self._timeout_s)
        offset = int(found[0].offset)
        return None if offset < 0 else offset

    def partitions(self, topic: str) -> list[int] | None:
        """The topic's partition numbers; None if the cluster has no such topic."""
        found = self._consumer.list_topics(topic, timeout=self._timeout_s).topics.get(topic)
        if found is None or found.error is not None:
            return None
        return sorted(found.partitions)

    def topics(self) -> list[str]:
        """Every topic of the cluster."""
        return sorted(self._consumer.list_topics(timeout=self._timeout_s).topics)

    def blocks(self, topic: str, partition: int, start: int, end: int) -> Generator[BatchBlock, None, None]:
        """The records at offsets start..end-1, a batch at a time, in order; ReadStalled if the end is not reached
        in time or the range has left the partition (retention), KafkaOperationError if the cluster refuses."""
        if start >= end:
            return
        self._follow(topic)
        key = (topic, partition)
        position = start
        deadline = time.monotonic() + self._timeout_s
        coming = self._submit(self._fetch(key, position))
        try:
            while position < end:
                answer = coming.result()
                batches = read_batches(answer.records) if answer is not None and not answer.error else []
                if batches:
                    deadline = time.monotonic() + self._timeout_s  # records arrived: the read is moving
                    after = max(position, batches[-1].next_offset)
                    if after < end:  # the next fetch is under way while this one is compared
                        coming = self._submit(self._fetch(key, after))
                    assert answer is not None
                    for batch in CommittedFilter(answer.aborted).committed(batches):
                        if batch.base_offset >= end:
                            break
                        if batch.last_offset >= position:
                            yield BatchBlock(batch, start, end, self.counter)
                    position = after
                    continue
                self._check(answer, key, position)
                if time.monotonic() > deadline:
                    raise ReadStalled(f"reading {topic}-{partition} stopped at offset {position} of {end}")
                coming = self._submit(self._fetch(key, position))
        finally:
            coming.cancel()

    def _check(self, answer: PartitionFetch | None, key: tuple[str, int], position: int) -> None:
        """Raise for an answer that asking again does not mend."""
        if answer is None or not answer.error or _mended_by_metadata(answer.error):
            return
        where = f"{key[0]}-{key[1]}"
        if answer.error == OFFSET_OUT_OF_RANGE:
            raise ReadStalled(f"reading {where}: offset {position} is not in the partition any more (or not yet)")
        raise KafkaOperationError(f"reading {where} failed: {error_name(answer.error)}", operation="fetch")

    async def _fetch(self, key: tuple[str, int], position: int) -> PartitionFetch | None:
        """One Fetch of `key` from `position`; None (after new metadata) when it could not be asked or answered."""
        fetcher = self._fetcher
        assert fetcher is not None
        node = fetcher.leader(key)
        answer = None
        try:
            if node is not None:
                answer = (await fetcher.fetch(node, {key: position}, FETCH_MAX_BYTES)).get(key)
                if answer is None or not _mended_by_metadata(answer.error):
                    return answer  # (None: the broker lost the fetch session; asked again at once)
        except KafkaOperationError:
            pass  # the connection failed
        await fetcher.refresh()
        await asyncio.sleep(RETRY_WAIT_S)
        return answer

    def _submit(self, work: Coroutine[Any, Any, T]) -> Future[T]:
        assert self._loop is not None
        return self._loop.submit(work)

    def _follow(self, topic: str) -> None:
        """Connect on the first read; know `topic`'s leaders and leader epochs before reading it."""
        if self._loop is None:
            self._loop = _LoopThread("strait-verify-fetch")
        if self._fetcher is None:
            self._fetcher = self._submit(self._open(topic)).result()
        else:
            self._submit(self._fetcher.add_topics([topic])).result()

    async def _open(self, topic: str) -> BatchFetcher:
        fetcher = BatchFetcher(
            aio_client(self._props, client_id=client_id("client", "verify", "fetch")),
            max_wait_ms=FETCH_WAIT_MS,
            max_bytes=FETCH_MAX_BYTES,
            partition_max_bytes=PARTITION_FETCH_BYTES,
            read_committed=True,
        )
        try:
            await fetcher.start([topic])
        except BaseException:
            await fetcher.close()
            raise
        return fetcher

    def close(self) -> None:
        """Leave the cluster (no group offsets are kept)."""
        try:
            if self._fetcher is not None and self._loop is not None:
                self._submit(self._fetcher.close()).result(timeout=30)
        finally:
            if self._loop is not None:
                self._loop.stop()
            self._consumer.close()
