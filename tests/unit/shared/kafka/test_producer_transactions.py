"""The batch producer in a transaction (exactly-once on the batch path), against a client that answers as a broker
and its transaction coordinator would: every partition is added before its first batch of a transaction, every
batch carries the transactional bit and the id, and the coordinator ends what was written."""

from __future__ import annotations

import asyncio
import struct
from collections import deque
from typing import Any

import pytest
from aiokafka.protocol.transaction import AddPartitionsToTxnRequest, EndTxnRequest, InitProducerIdRequest
from crc32c import crc32c

from shared.errors import KafkaOperationError
from shared.kafka.batch_producer import BatchProducer
from shared.kafka.outgoing_batches import Outcome
from shared.kafka.produce_request import BatchProduceRequest
from shared.kafka.record_batches import TRANSACTIONAL_FLAG
from shared.kafka.transaction_coordinator import TransactionCoordinator
from tests.unit.shared.kafka.test_batch_producer import TOPIC, _batch, _Broker, _run

TXN_ID = "strait-mirror-A->B-0"
CONCURRENT_TRANSACTIONS, PRODUCER_FENCED = 51, 90


class _Coordinated(_Broker):
    """A broker that is also the transaction coordinator; `coordinator_script` forces its next answers."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, Any]] = []
        self.coordinator_script: deque[int] = deque()
        self.written: list[tuple[str | None, int]] = []  # (transactional id, attributes) of each batch written

    async def coordinator_lookup(self, _kind: Any, key: str) -> int:
        assert key == TXN_ID
        return 1

    async def send(self, node: int, request: Any, group: Any = None) -> Any:
        answer = self.coordinator_script.popleft() if self.coordinator_script else 0
        if isinstance(request, InitProducerIdRequest):
            self.calls.append(("init", request._transactional_id))
            return type("Response", (), {"error_code": answer, "producer_id": 41, "producer_epoch": 3})()
        if isinstance(request, AddPartitionsToTxnRequest):
            self.calls.append(("add", request._topics))
            errors = [(topic, [(p, answer) for p in partitions]) for topic, partitions in request._topics]
            return type("Response", (), {"errors": errors})()
        if isinstance(request, EndTxnRequest):
            self.calls.append(("commit" if request._transaction_result else "abort", None))
            return type("Response", (), {"error_code": answer})()
        if answer:
            self.coordinator_script.appendleft(answer)  # (a scripted answer is the coordinator's, not Produce's)
        assert isinstance(request, BatchProduceRequest)
        ((_topic, [(_partition, payload)]),) = request._topics
        self.written.append((request._transactional_id, struct.unpack_from(">h", payload.head, 21)[0]))
        crc = struct.unpack_from(">I", payload.head, 17)[0]
        assert crc == crc32c(payload.body, crc32c(memoryview(payload.head)[21:])), "the CRC covers the attributes"
        return await super().send(node, request)

    async def bootstrap(self) -> None:
        pass

    async def set_topics(self, _topics: list[str]) -> None:
        pass


async def _started(broker: _Coordinated) -> BatchProducer:
    coordinator = TransactionCoordinator(broker, TXN_ID, transaction_timeout_ms=60_000, timeout_s=5)
    producer = BatchProducer(broker, request_timeout_ms=1_000, delivery_timeout_s=30, transactions=coordinator)
    await producer.start([TOPIC])
    return producer


async def test_a_partition_is_added_before_its_first_batch_and_every_batch_is_in_the_transaction() -> None:
    broker = _Coordinated()
    producer = await _started(broker)
    assert (producer.producer_id, producer.producer_epoch) == (41, 3), "the coordinator's id and new epoch"
    producer.send(_batch(3, "a"))
    await _run(producer, 0)
    assert broker.produced == 0, "nothing goes out outside a transaction"

    producer.begin_transaction()
    producer.send(_batch(2, "b"))
    assert [x.outcome for x in await _run(producer, 2)] == [Outcome.ACKNOWLEDGED] * 2
    assert broker.calls == [("init", TXN_ID), ("add", [(TOPIC, [0])])], "added once, before the first batch"
    assert all(txn == TXN_ID and attributes & TRANSACTIONAL_FLAG for txn, attributes in broker.written)
    await producer.commit_transaction()
    assert broker.calls[-1] == ("commit", None)

    producer.begin_transaction()
    producer.send(_batch(1, "c"))
    await _run(producer, 1)
    assert broker.calls[-2:] == [("commit", None), ("add", [(TOPIC, [0])])], "added again in the next transaction"
    assert [sequence for sequence, _ in broker.log] == [0, 3, 5], "sequences go on across transactions"


async def test_a_coordinator_still_ending_the_last_transaction_is_asked_again() -> None:
    broker = _Coordinated()
    producer = await _started(broker)
    producer.begin_transaction()
    broker.coordinator_script.extend([CONCURRENT_TRANSACTIONS, CONCURRENT_TRANSACTIONS])
    producer.send(_batch(1, "a"))
    assert [x.outcome for x in await _run(producer, 1)] == [Outcome.ACKNOWLEDGED]
    assert [name for name, _ in broker.calls].count("add") == 3


async def test_a_fenced_producer_stops_and_commits_nothing() -> None:
    broker = _Coordinated()
    producer = await _started(broker)
    producer.begin_transaction()
    broker.coordinator_script.append(PRODUCER_FENCED)
    producer.send(_batch(1, "a"))
    with pytest.raises(KafkaOperationError, match="PRODUCER_FENCED"):
        await _run(producer, 1)
    assert broker.produced == 0
    with pytest.raises(KafkaOperationError):
        await producer.commit_transaction()
    assert "commit" not in [name for name, _ in broker.calls]


async def test_commit_waits_for_no_answer_and_refuses_with_batches_out() -> None:
    broker = _Coordinated()
    producer = await _started(broker)
    producer.begin_transaction()
    producer.send(_batch(1, "a"))
    with pytest.raises(KafkaOperationError, match="not yet answered"):
        await producer.commit_transaction()


async def test_abort_drops_what_is_queued_and_ends_the_transaction() -> None:
    broker = _Coordinated()
    producer = await _started(broker)
    producer.begin_transaction()
    producer.send(_batch(1, "sent"))
    await _run(producer, 1)
    producer.send(_batch(1, "queued"))
    await producer.abort_transaction(5)
    assert [(x.outcome, x.batch.note) for x in producer.take_landed()] == [(Outcome.DROPPED, "queued")]
    assert broker.calls[-1] == ("abort", None)
    producer.begin_transaction()
    await producer.commit_transaction()  # nothing written in it: nothing to end at the coordinator
    assert broker.calls[-1] == ("abort", None)
    await asyncio.sleep(0)
