"""The verifier's reader over a partition holding a record whose header key is not UTF-8 (Kafka allows any bytes;
confluent-kafka fails to read such a key)."""

from __future__ import annotations

from typing import Any

from shared.kafka.digest_reader import PartitionEntries, ReadCounter
from tests.unit.services.data_mirror.fake_kafka import FakeCluster, FakeConsumer, Record


def _entries(records: list[Record]) -> list[int]:
    cluster = FakeCluster()
    cluster.log("orders", 0).extend(records)
    reader: Any = PartitionEntries.__new__(PartitionEntries)  # its consumer given, not made from settings
    reader._consumer, reader._timeout_s = FakeConsumer(cluster), 1.0
    reader._consumer.unassign = lambda: None
    reader.counter = ReadCounter()
    return [entry.digest for entry in reader.entries("orders", 0, 0, len(records))]


def test_a_record_whose_header_key_is_not_utf8_is_read_and_digested_not_a_failed_read() -> None:
    plain = [Record(f"k{i}".encode(), b"v", 1_000 + i, [("h", b"x")]) for i in range(3)]
    odd = Record(b"k1", b"v", 1_001, [("h", b"x")], key_not_utf8=True)
    digests = _entries([plain[0], odd, plain[2]])
    assert len(digests) == 3, "every record read, the one with the odd key too"
    assert digests[0] == _entries(plain)[0]
    assert digests == _entries([plain[0], Record(b"k1", b"v", 1_001, None, key_not_utf8=True), plain[2]])
