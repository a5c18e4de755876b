"""Compare a source topic with its remote copy: how many records were lost and how many arrived twice.

Fault tests and the soak run write records whose values are unique (for example `b"<partition>:<seq>"`), so
identity is the value; the comparison is per partition, as mirroring keeps partitions.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from tests.support.kafka_io import Rec, consume_all, read_to_end


@dataclass(frozen=True)
class ReplicaReport:
    """Lost and duplicated records of one topic pair."""

    source_records: int
    target_records: int
    lost: int
    duplicates: int
    lost_examples: list[str] = field(default_factory=list)
    moved: int = 0  # records that arrived in a different partition than they came from

    def line(self, label: str = "") -> str:
        """One line for the test output: `label: source=… target=… lost=… duplicates=…`."""
        prefix = f"{label}: " if label else ""
        return (
            f"{prefix}source={self.source_records} target={self.target_records} "
            f"lost={self.lost} duplicates={self.duplicates} moved={self.moved}"
        )


def compare_records(source: Iterable[Rec], target: Iterable[Rec]) -> ReplicaReport:
    """Lost = source values missing on the target (per partition); duplicates = extra copies on the target."""
    wanted: Counter[tuple[int, bytes | None]] = Counter((r.partition, r.value) for r in source)
    got: Counter[tuple[int, bytes | None]] = Counter((r.partition, r.value) for r in target)
    lost_keys = [key for key in wanted if got[key] < wanted[key]]
    lost = sum(wanted[key] - got[key] for key in lost_keys)
    duplicates = sum(max(0, got[key] - wanted[key]) for key in got if key in wanted)
    moved = sum(count for key, count in got.items() if key not in wanted)
    examples = [f"{p}:{v!r}" for p, v in lost_keys[:5]]
    return ReplicaReport(sum(wanted.values()), sum(got.values()), lost, duplicates, examples, moved)


def compare_topics(
    source_props: Mapping[str, str],
    source_topic: str,
    target_props: Mapping[str, str],
    remote_topic: str,
    *,
    timeout_s: float = 120,
    isolation_level: str = "read_uncommitted",
) -> ReplicaReport:
    """Read both topics to their current ends and compare them (call once mirroring has caught up)."""
    source = read_to_end(source_props, source_topic, timeout_s=timeout_s)
    target = consume_all(
        target_props, remote_topic, expected=10**12, timeout_s=min(timeout_s, 15), isolation_level=isolation_level
    )
    return compare_records(source, target)
