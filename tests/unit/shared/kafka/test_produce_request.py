"""The batch path's Produce request is byte for byte what aiokafka's own encoder writes for the same batches."""

from __future__ import annotations

import pytest
from aiokafka.protocol.produce import ProduceRequest_v3, ProduceRequest_v7
from aiokafka.record.default_records import DefaultRecordBatchBuilder

from shared.kafka.produce_request import BatchProduceRequest, FlatProduceRequest_v3, FlatProduceRequest_v7
from shared.kafka.record_batches import TargetBatch, for_target, read_batches


def _encoded(values: list[bytes]) -> bytes:
    builder = DefaultRecordBatchBuilder(2, 0, 0, -1, -1, -1, 1 << 20)
    for index, value in enumerate(values):
        builder.append(index, 1_000 + index, None, value, [("h", b"x")])
    return bytes(builder.build())


@pytest.mark.parametrize(
    ("ours", "theirs"), [(FlatProduceRequest_v3, ProduceRequest_v3), (FlatProduceRequest_v7, ProduceRequest_v7)]
)
def test_the_request_is_what_aiokafka_encodes_for_the_same_batches(ours: type, theirs: type) -> None:
    fetched = _encoded([b"a" * 300, b"b" * 10])
    forwarded = for_target(read_batches(fetched)[0], 41, 3, 17)
    made = TargetBatch.of(bytearray(_encoded([b"progress"])))
    made.set_producer(41, 3, 0)
    topics = [("A.orders", [(0, forwarded), (5, made)]), ("A.audit-é", [(2, made)])]
    request = BatchProduceRequest(-1, 30_000, topics).build(ours)
    expected = theirs(None, -1, 30_000, [(topic, [(p, bytes(b)) for p, b in parts]) for topic, parts in topics])
    assert request.encode() == expected.encode()
