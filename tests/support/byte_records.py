"""Records whose header keys are bytes, written and read over the Kafka protocol as a non-Java producer and a raw
reader would: confluent-kafka and aiokafka take header keys for UTF-8 text and cannot write (nor read) a key that is
not, which Kafka allows. Batches are v2 (`shared.kafka.byte_headers`), sent with aiokafka's Produce request and
read back with its Fetch request, so a test sees a copy's header keys byte for byte."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from aiokafka.client import AIOKafkaClient
from aiokafka.protocol.fetch import FetchRequest
from aiokafka.protocol.produce import ProduceRequest
from aiokafka.structs import TopicPartition

from shared.kafka.byte_headers import read_records, write_batch
from shared.kafka.factories import aio_client
from shared.kafka.record_batches import read_batches
from tests.support.kafka_io import end_offsets

ByteHeaders = list[tuple[str | bytes, bytes | None]]  # a key that is UTF-8 as str, any other as its bytes
Written = tuple[int, bytes | None, bytes | None, ByteHeaders]  # timestamp, key, value, headers
ACKS_ALL = -1
LEADER_WITHIN_S = 30
FETCH_BYTES = 8 * 2**20


@dataclass(frozen=True)
class ByteRec:
    """A record as the broker holds it (the fields of `tests.support.kafka_io.Rec`, header keys as above)."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: ByteHeaders
    timestamp_ms: int


def produce_batch(props: Mapping[str, str], topic: str, partition: int, records: Sequence[Written]) -> int:
    """Write `records` to one partition as a single v2 batch (no compression, no producer id), acks=all; returns
    the offset of its first record."""
    return asyncio.run(_produce(props, topic, partition, bytes(write_batch(records, 0))))


def read_all(props: Mapping[str, str], topic: str, *, timeout_s: float = 60) -> list[ByteRec]:
    """Every record of `topic` up to the end offsets at call time, partition by partition, in offset order
    (read_uncommitted: for topics written without transactions)."""
    return asyncio.run(_read(props, topic, end_offsets(props, topic), timeout_s))


def _header_key(name: bytes) -> str | bytes:
    try:
        return name.decode()
    except UnicodeDecodeError:
        return name


async def _leader(client: AIOKafkaClient, topic: str, partition: int) -> int:
    """The partition's leader, asking for metadata again while it is not known yet (a topic just made)."""
    deadline = time.monotonic() + LEADER_WITHIN_S
    while True:
        node = client.cluster.leader_for_partition(TopicPartition(topic, partition))
        if node is not None and node >= 0:
            return int(node)
        assert time.monotonic() < deadline, f"{topic}-{partition} has no leader after {LEADER_WITHIN_S} s"
        await asyncio.sleep(0.2)
        await client.force_metadata_update()


async def _connected(props: Mapping[str, str], topic: str) -> AIOKafkaClient:
    client = aio_client(props)
    await client.bootstrap()
    await client.set_topics([topic])
    return client


async def _produce(props: Mapping[str, str], topic: str, partition: int, batch: bytes) -> int:
    client = await _connected(props, topic)
    try:
        node = await _leader(client, topic, partition)
        response = await client.send(node, ProduceRequest(None, ACKS_ALL, 30_000, [(topic, [(partition, batch)])]))
        ((_, answers),) = response.topics
        ((_, error, base_offset, *_),) = answers
        assert error == 0, f"producing to {topic}-{partition}: error code {error}"
        return int(base_offset)
    finally:
        await client.close()


async def _read(props: Mapping[str, str], topic: str, ends: list[int], timeout_s: float) -> list[ByteRec]:
    client = await _connected(props, topic)
    records: list[ByteRec] = []
    deadline = time.monotonic() + timeout_s
    try:
        for partition, end in enumerate(ends):
            position = 0
            while position < end:
                assert time.monotonic() < deadline, f"{topic}-{partition}: read to {position} of {end} in {timeout_s} s"
                node = await _leader(client, topic, partition)
                request = FetchRequest(100, 1, FETCH_BYTES, 0, [(topic, [(partition, position, FETCH_BYTES)])])
                response = await client.send(node, request)
                ((_, answers),) = response.topics
                answer = answers[0]
                error, message_set = answer[1], answer[-1]
                assert error == 0, f"fetching {topic}-{partition} at {position}: error code {error}"
                for batch in read_batches(message_set or b""):
                    if not batch.is_control:
                        for offset, timestamp, key, value, headers in read_records(bytes(batch.raw)):
                            if position <= offset < end:
                                named = [
                                    (_header_key(name) if isinstance(name, bytes) else name, v) for name, v in headers
                                ]
                                records.append(ByteRec(partition, offset, key, value, named, timestamp))
                    position = max(position, batch.next_offset)
    finally:
        await client.close()
    return records
