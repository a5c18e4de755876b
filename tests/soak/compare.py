"""The full record-by-record comparison of each source partition with its remote copy.

Partitions are read one at a time and streamed through `replica_check.compare_records`, so memory stays at one
partition's worth however long the run was. The same pass checks the producer's acknowledgements against the
source and, where the consumer group has a checkpoint, that resuming on the target from the translated offset
misses nothing.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from confluent_kafka import OFFSET_BEGINNING, TopicPartition

from shared.kafka.factories import confluent_consumer
from shared.verify.findings import PartitionFindings
from tests.soak.producer import AckLedger, decode_seq
from tests.support.kafka_io import Rec
from tests.support.replica_check import ReplicaReport, compare_records

READ_TIMEOUT_S = 600


class SoakError(RuntimeError):
    """The soak could not finish a step (a topic unreadable before its deadline, ...)."""


@dataclass(frozen=True)
class ResumePoint:
    """A checkpoint: the group's committed source offset and where it resumes on the target."""

    upstream: int
    downstream: int


@dataclass(frozen=True)
class ResumeCheck:
    """Resuming one partition on the target at the translated offset, compared with reading on at the source."""

    missing: int  # records at or after the committed source offset that the target has not after the resume point
    rereads: int  # records the target would deliver again (already read on the source, or copied twice)
    past_end: bool  # the resume point lies beyond the target's end (it would skip what arrives next)


@dataclass(frozen=True)
class TopicComparison:
    """One topic against its remote copy: the product's verifier (`strait verify`'s engine) is the oracle; the
    value-based report beside it is a second, independent opinion (values are unique in the soak)."""

    topic: str
    remote: str
    report: ReplicaReport
    acked_missing: int  # acknowledged by the source cluster, yet not in the source topic (the brokers lost them)
    resume: dict[int, ResumeCheck] = field(default_factory=dict)
    verified: list[PartitionFindings] = field(default_factory=list)

    @property
    def lost(self) -> int:
        """Missing or altered by the verifier, or lost by the value check: either says a record is not there."""
        return max(sum(f.lost for f in self.verified), self.report.lost)

    def count(self, name: str) -> int:
        """A verifier count summed over the topic's partitions (verified, missing_records, duplicates, ...)."""
        return sum(int(getattr(f, name)) for f in self.verified)


def end_offset(props: Mapping[str, str], topic: str, partition: int) -> int:
    """The partition's high watermark."""
    consumer = confluent_consumer(props, **{"group.id": "soak-verify", "enable.auto.commit": False})
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=30)[1])
    finally:
        consumer.close()


def read_partition(props: Mapping[str, str], topic: str, partition: int, end: int, timeout_s: float) -> Iterator[Rec]:
    """Every record of the partition below offset `end`, in order; SoakError if they do not arrive in time."""
    if end <= 0:
        return
    consumer = confluent_consumer(props, **{"group.id": "soak-verify", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
        deadline = time.monotonic() + timeout_s
        last = -1
        while last < end - 1:
            if time.monotonic() > deadline:
                raise SoakError(f"read {topic}-{partition} only up to offset {last + 1} of {end} in {timeout_s}s")
            for message in consumer.consume(num_messages=5000, timeout=1):
                offset = message.offset()
                if message.error() is not None or offset is None or offset >= end:
                    continue
                last = max(last, offset)
                yield Rec(partition, offset, message.key(), message.value(), [], message.timestamp()[1])
    finally:
        consumer.close()


def _mark(seen: bytearray, value: bytes | None) -> None:
    seq = decode_seq(value)
    if seq is not None:
        if seq >= len(seen):
            seen.extend(bytes(seq + 1 - len(seen) + 4096))
        seen[seq] = 1


def compare_partition(
    source_props: Mapping[str, str],
    target_props: Mapping[str, str],
    topic: str,
    remote: str,
    partition: int,
    ledger: AckLedger,
    point: ResumePoint | None,
) -> tuple[ReplicaReport, int, ResumeCheck | None]:
    """(replica report, acknowledged-but-missing-from-source count, resume check) of one partition."""
    source_end = end_offset(source_props, topic, partition)
    target_end = end_offset(target_props, remote, partition)
    seen = bytearray()
    needed: set[bytes | None] = set()
    resumed: list[bytes | None] = []

    def source_side() -> Iterator[Rec]:
        for rec in read_partition(source_props, topic, partition, source_end, READ_TIMEOUT_S):
            _mark(seen, rec.value)
            if point is not None and rec.offset >= point.upstream:
                needed.add(rec.value)
            yield rec

    def target_side() -> Iterator[Rec]:
        for rec in read_partition(target_props, remote, partition, target_end, READ_TIMEOUT_S):
            if point is not None and rec.offset >= point.downstream:
                resumed.append(rec.value)
            yield rec

    report = compare_records(source_side(), target_side())
    acked_missing = ledger.missing_from((topic, partition), seen)
    if point is None:
        return report, acked_missing, None
    missing = len(needed - set(resumed))
    check = ResumeCheck(missing, len(resumed) - (len(needed) - missing), point.downstream > target_end)
    return report, acked_missing, check


def compare_topic(
    source_props: Mapping[str, str],
    target_props: Mapping[str, str],
    topic: str,
    remote: str,
    partitions: int,
    ledger: AckLedger,
    points: Mapping[int, ResumePoint],
) -> TopicComparison:
    """Every partition of `topic` against `remote`, summed into one report."""
    reports: list[ReplicaReport] = []
    acked_missing = 0
    resume: dict[int, ResumeCheck] = {}
    for partition in range(partitions):
        report, missing, check = compare_partition(
            source_props, target_props, topic, remote, partition, ledger, points.get(partition)
        )
        reports.append(report)
        acked_missing += missing
        if check is not None:
            resume[partition] = check
    return TopicComparison(topic, remote, sum_reports(reports), acked_missing, resume)


def sum_reports(reports: list[ReplicaReport]) -> ReplicaReport:
    """Per-partition reports added up (the first few lost examples kept)."""
    return ReplicaReport(
        source_records=sum(r.source_records for r in reports),
        target_records=sum(r.target_records for r in reports),
        lost=sum(r.lost for r in reports),
        duplicates=sum(r.duplicates for r in reports),
        lost_examples=[example for r in reports for example in r.lost_examples][:5],
        moved=sum(r.moved for r in reports),
    )
