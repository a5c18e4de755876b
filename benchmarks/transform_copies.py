"""Section 12's data with headers and its check of a transformed copy, record by record against the source.

`strait verify` compares a copy with its source as it is; a copy made through InsertHeader or DropHeaders differs
from it by design. Such a copy is checked here instead: every source record, in order per partition, through the
flow's chain (Strait's own `TransformChain`, which the transform tests hold to MM2's output), must be the record at
the same place on the target, key, value, headers and timestamp.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from benchmarks.datasets import PARTITIONS, Dataset, check_filled
from shared.config.transforms import parse_transforms
from shared.kafka.factories import confluent_producer
from shared.kafka.follow import FollowedRecord
from shared.kafka.partition_reader import each_record
from shared.localkafka import KafkaCluster
from shared.reshape.transforms import MirrorRecord, TransformChain

RUN_RECORDS = 256  # records in a row to one partition: a full 256 KiB batch each, as the perf tool's sticky batches
READ_TIMEOUT_S = 300


def fill_with_header(cluster: KafkaCluster, dataset: Dataset, header: str) -> None:
    """Fill the data set's existing topic with distinct values of `record_size` bytes, no key, each record carrying
    the header `header` (16 bytes), with the producer settings of the perf tool's fills; then check the count."""
    producer = confluent_producer(cluster.client_properties(), **dataset.producer)
    padding = b"x" * (dataset.record_size - 10)
    for i in range(dataset.records):
        while True:
            try:
                producer.produce(
                    dataset.topic,
                    f"{i:010d}".encode() + padding,
                    partition=(i // RUN_RECORDS) % PARTITIONS,
                    headers=[(header, f"trace-{i:010d}".encode())],
                )
                break
            except BufferError:
                producer.poll(0.05)
        if i % 10_000 == 0:
            producer.poll(0)
    if producer.flush(120):
        raise RuntimeError(f"{dataset.topic}: not every record was acknowledged while filling")
    check_filled(cluster, dataset)


@dataclass(frozen=True)
class ChainCheck:
    """A transformed copy against its source: records compared, and how many were not as the chain makes them."""

    compared: int
    differing: int  # a target record unlike the source record through the chain, or one missing or extra

    @property
    def exact(self) -> bool:
        return self.differing == 0


def check_through_chain(
    source: KafkaCluster,
    target: KafkaCluster,
    topic: str,
    remote: str,
    flow_settings: Sequence[tuple[str, str]],
) -> ChainCheck:
    """Compare `remote` on the target with `topic` on the source through the chain `flow_settings` configure."""
    chain = TransformChain(parse_transforms(dict(flow_settings), {}))
    compared = differing = 0
    for partition in range(PARTITIONS):
        expected = _expected(source, topic, remote, partition, chain)
        copied = _contents(target, remote, partition)
        for want, got in zip(expected, copied, strict=False):
            compared += 1
            differing += want != got
        differing += abs(len(expected) - len(copied))
    return ChainCheck(compared, differing)


Content = tuple[bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...], int]


def _expected(source: KafkaCluster, topic: str, remote: str, partition: int, chain: TransformChain) -> list[Content]:
    found = []
    for record in _records(source, topic, partition):
        headers, timestamp = list(record.headers), record.timestamp_ms
        mirrored = MirrorRecord(remote, partition, record.offset, record.key, record.value, headers, timestamp)
        kept = chain.apply(mirrored)
        if kept is not None:
            found.append((kept.key, kept.value, tuple(kept.headers), kept.timestamp))
    return found


def _contents(cluster: KafkaCluster, topic: str, partition: int) -> list[Content]:
    return [(r.key, r.value, tuple(r.headers), r.timestamp_ms) for r in _records(cluster, topic, partition)]


def _records(cluster: KafkaCluster, topic: str, partition: int) -> Iterator[FollowedRecord]:
    props: Mapping[str, str] = cluster.client_properties()
    for _partition, record in each_record(props, topic, {partition: (0, 2**62)}, timeout_s=READ_TIMEOUT_S):
        yield record
