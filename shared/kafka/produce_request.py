"""The Produce request of the batch path, written in one pass from each batch's header and records.

aiokafka encodes a request by nesting: every array and struct joins its parts into new bytes, so each record batch
was copied six times on its way into a request (then twice more by the connection, which adds the request header
and the size). Here the request body is one join over the pieces, the batches' records among them as they are
(a view of the fetch response they came in, for a forwarded batch): one copy. The wire format is aiokafka's
(`ProduceRequest_v3` to `_v7`: v2 record batches, idempotence), so are the negotiated version and the response.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import TypeAlias

from aiokafka.protocol.api import Request
from aiokafka.protocol.produce import (
    ProduceRequest_v3,
    ProduceRequest_v4,
    ProduceRequest_v5,
    ProduceRequest_v6,
    ProduceRequest_v7,
)

from shared.kafka.record_batches import TargetBatch

TopicBatches = Sequence[tuple[str, Sequence[tuple[int, TargetBatch]]]]
_NULL_STRING = struct.pack(">h", -1)


def _string(value: str | None) -> bytes:
    if value is None:
        return _NULL_STRING
    encoded = value.encode("utf-8")
    return struct.pack(">h", len(encoded)) + encoded


def encode_body(transactional_id: str | None, acks: int, timeout_ms: int, topics: TopicBatches) -> bytes:
    """A Produce request's body (v3 to v8 share it): transactional id, acks, timeout, then per topic its batches."""
    pieces: list[bytes | bytearray | memoryview] = [
        _string(transactional_id),
        struct.pack(">hii", acks, timeout_ms, len(topics)),
    ]
    for topic, partitions in topics:
        pieces += (_string(topic), struct.pack(">i", len(partitions)))
        for partition, batch in partitions:
            pieces += (struct.pack(">ii", partition, len(batch)), batch.head, batch.body)
    return b"".join(pieces)


class _Flat:
    """Mixed into aiokafka's request structs: the same fields, encoded in one pass."""

    transactional_id: str | None
    required_acks: int
    timeout: int
    topics: TopicBatches

    def encode(self) -> bytes:
        return encode_body(self.transactional_id, self.required_acks, self.timeout, self.topics)


class FlatProduceRequest_v3(_Flat, ProduceRequest_v3):  # type: ignore[misc]  # (Kafka's names, as aiokafka's)
    pass


class FlatProduceRequest_v4(_Flat, ProduceRequest_v4):  # type: ignore[misc]
    pass


class FlatProduceRequest_v5(_Flat, ProduceRequest_v5):  # type: ignore[misc]
    pass


class FlatProduceRequest_v6(_Flat, ProduceRequest_v6):  # type: ignore[misc]
    pass


class FlatProduceRequest_v7(_Flat, ProduceRequest_v7):  # type: ignore[misc]
    pass


_Struct: TypeAlias = (
    FlatProduceRequest_v3
    | FlatProduceRequest_v4
    | FlatProduceRequest_v5
    | FlatProduceRequest_v6
    | FlatProduceRequest_v7
)


class BatchProduceRequest(Request[_Struct]):  # type: ignore[misc]
    """Produce (acks, timeout) of ready-made batches: the batch path's idempotent producer, or its transactional one
    (`transactional_id` set: every batch is in that producer's open transaction)."""

    API_KEY = 0

    def __init__(
        self, acks: int, timeout_ms: int, topics: TopicBatches, *, transactional_id: str | None = None
    ) -> None:
        self._acks, self._timeout_ms, self._topics = acks, timeout_ms, topics
        self._transactional_id = transactional_id

    def build(self, request_struct_class: type[_Struct]) -> _Struct:
        return request_struct_class(self._transactional_id, self._acks, self._timeout_ms, self._topics)
