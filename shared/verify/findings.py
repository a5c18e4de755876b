"""What verifying one partition found, as plain data for the table, `--json`, the audit's metrics and tests."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

EXAMPLES_KEPT = 20  # offsets named per finding; the counts are always complete


@dataclass(frozen=True, slots=True)
class OffsetRange:
    """Source (or target) offsets `first..last` inclusive, holding `records` records (compaction leaves gaps)."""

    first: int
    last: int
    records: int


class RangeList:
    """Offsets added in increasing order, merged into ranges when nothing read lies between them."""

    def __init__(self) -> None:
        self.ranges: list[OffsetRange] = []
        self.records = 0
        self._open: list[int] | None = None  # [first, last, records] of the range being extended
        self._adjacent_to: int | None = None  # the offset a range may be extended from

    def add(self, offset: int, *, adjacent: bool) -> None:
        """Add `offset`; `adjacent` says no record read lies between it and the previous one added."""
        self.records += 1
        if self._open is not None and adjacent and self._adjacent_to == self._open[1]:
            self._open[1] = offset
            self._open[2] += 1
        else:
            self._close()
            self._open = [offset, offset, 1]
        self._adjacent_to = offset

    def add_span(self, first: int, last: int, records: int) -> None:
        """Add a whole range known without reading it (offsets no longer on the source)."""
        self._close()
        self.records += records
        self.ranges.append(OffsetRange(first, last, records))

    def finish(self) -> list[OffsetRange]:
        """The ranges, the open one closed."""
        self._close()
        return self.ranges

    def _close(self) -> None:
        if self._open is not None:
            self.ranges.append(OffsetRange(*self._open))
            self._open = None


@dataclass(frozen=True, slots=True)
class AlteredRecord:
    """A target record in the place of a source record whose key, value, headers or timestamp it does not equal."""

    source_offset: int
    target_offset: int


@dataclass(frozen=True)
class PartitionFindings:
    """One source partition against its remote partition, over the ranges read.

    Lost is `missing + altered`: records the source holds (within what the mirror has copied) that the target
    lacks, or holds changed. The rest explain themselves: `duplicates` are second copies (at-least-once replays),
    `unexpected` target records match no source record, `expired` source offsets left the source before they were
    copied (retention, or compaction), `source_gone` target records whose source record has since left the source
    (nothing to compare with), `not_yet_copied` source records at or after the mirror's position.

    On a flow with transforms or provenance the target is compared with what the flow makes of each source record:
    `dropped` source records its transforms drop and `returned` ones provenance keeps from going back to the target
    are expected absent; `target_own` target records the flow did not write (active/active under
    IdentityReplicationPolicy) are not compared. Where a transform fails on a source record (`transform_failure`),
    the records from there on are `unverified`, or not yet copied when the mirror waits at the same record.
    """

    topic: str
    partition: int
    remote_topic: str
    source_from: int
    source_to: int
    target_from: int
    target_to: int
    verified: int = 0
    missing: list[OffsetRange] = field(default_factory=list)
    missing_records: int = 0
    altered: list[AlteredRecord] = field(default_factory=list)
    altered_records: int = 0
    duplicates: int = 0
    duplicate_offsets: list[int] = field(default_factory=list)  # target offsets of the first few
    unexpected: int = 0
    unexpected_offsets: list[int] = field(default_factory=list)  # target offsets of the first few
    expired: list[OffsetRange] = field(default_factory=list)
    expired_records: int = 0
    source_gone: int = 0
    not_yet_copied: int = 0
    copied_to: int | None = None  # the mirror's next source offset (its progress), when known
    bytes_read: int = 0
    not_verified: str | None = None  # why nothing could be compared (no remote topic, ...)
    dropped: int = 0
    returned: int = 0
    target_own: int = 0
    transform_failure: str | None = None  # the source offset a transform failed on, and how
    unverified: int = 0  # source offsets from there on, copied by the mirror: what their copies should be is unknown

    @property
    def lost(self) -> int:
        """Records the target lacks or holds changed."""
        return self.missing_records + self.altered_records

    def as_json(self) -> dict[str, Any]:
        """Plain data (offset ranges as {first, last, records})."""
        data = asdict(self)
        data["lost"] = self.lost
        return data


@dataclass(frozen=True)
class VerifyTotals:
    """Every partition's findings added up, and how fast they were read."""

    partitions: int
    verified: int
    missing: int
    altered: int
    duplicates: int
    unexpected: int
    expired: int
    source_gone: int
    not_yet_copied: int
    not_verified: int  # partitions
    dropped: int
    returned: int
    target_own: int
    unverified: int
    bytes_read: int
    records_read: int
    cpu_s: float
    wall_s: float

    @property
    def lost(self) -> int:
        """Missing plus altered: what makes `strait verify` fail."""
        return self.missing + self.altered

    @classmethod
    def of(cls, findings: list[PartitionFindings], *, records_read: int, cpu_s: float, wall_s: float) -> VerifyTotals:
        """Sum of `findings`."""
        return cls(
            partitions=len(findings),
            verified=sum(f.verified for f in findings),
            missing=sum(f.missing_records for f in findings),
            altered=sum(f.altered_records for f in findings),
            duplicates=sum(f.duplicates for f in findings),
            unexpected=sum(f.unexpected for f in findings),
            expired=sum(f.expired_records for f in findings),
            source_gone=sum(f.source_gone for f in findings),
            not_yet_copied=sum(f.not_yet_copied for f in findings),
            not_verified=sum(1 for f in findings if f.not_verified is not None),
            dropped=sum(f.dropped for f in findings),
            returned=sum(f.returned for f in findings),
            target_own=sum(f.target_own for f in findings),
            unverified=sum(f.unverified for f in findings),
            bytes_read=sum(f.bytes_read for f in findings),
            records_read=records_read,
            cpu_s=cpu_s,
            wall_s=wall_s,
        )

    def as_json(self) -> dict[str, Any]:
        """Plain data, with the read rate per core."""
        data = asdict(self)
        data["lost"] = self.lost
        data["mib_per_cpu_s"] = round(self.bytes_read / 2**20 / self.cpu_s, 1) if self.cpu_s > 0 else None
        data["records_per_cpu_s"] = round(self.records_read / self.cpu_s) if self.cpu_s > 0 else None
        return data
