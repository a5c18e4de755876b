"""What a failover now would leave behind (the recovery point), from data-mirror's progress: pure, no I/O.

Per partition: the records the source holds beyond the copy position (its end as last seen minus the position) and
the age of the oldest of them (since when the task has seen the source hold a record it had not copied). Summed per
topic and per flow; a flow's seconds are its oldest partition's. While the source does not answer the figures are
the last known, and `as_of_ms` says from when.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from shared.dr.records import RpoSummary, TopicRpo

TOPICS_SHOWN = 50  # topics listed in a summary, most behind first; the totals are always complete


@dataclass(frozen=True, slots=True)
class PartitionLag:
    """One partition's copy position against the source's end as last seen."""

    topic: str
    partition: int
    next_offset: int
    end_offset: int | None
    behind_since_ms: int | None = None

    @property
    def records(self) -> int | None:
        """Records on the source not yet copied (None: the end was never seen)."""
        return None if self.end_offset is None else max(0, self.end_offset - self.next_offset)

    def seconds(self, now_ms: int) -> float | None:
        """Age of the oldest record not yet copied: 0 when nothing is behind, None when behind since an unknown time."""
        if not self.records:
            return 0.0 if self.records == 0 else None
        if self.behind_since_ms is None:
            return None
        return round(max(0.0, (now_ms - self.behind_since_ms) / 1000), 3)


def _oldest(ages: Iterable[float | None]) -> float | None:
    known = [age for age in ages if age is not None]
    return max(known) if known else None


def summarize(
    lags: Iterable[PartitionLag],
    *,
    now_ms: int,
    as_of_ms: int | None = None,
    source_reachable: bool | None = None,
    topics_shown: int = TOPICS_SHOWN,
) -> RpoSummary:
    """The flow's RPO: totals, and the topics most behind (by records, then seconds) up to `topics_shown`."""
    by_topic: dict[str, list[PartitionLag]] = {}
    for lag in lags:
        by_topic.setdefault(lag.topic, []).append(lag)
    topics = []
    for topic, parts in by_topic.items():
        behind = [lag for lag in parts if lag.records]
        topics.append(
            TopicRpo(
                topic=topic,
                records=sum(lag.records or 0 for lag in parts),
                seconds=_oldest(lag.seconds(now_ms) for lag in parts),
                partitions_behind=len(behind),
            )
        )
    topics.sort(key=lambda entry: (-entry.records, -(entry.seconds or 0.0), entry.topic))
    return RpoSummary(
        records=sum(entry.records for entry in topics),
        seconds=_oldest(entry.seconds for entry in topics) if topics else 0.0,
        partitions=sum(len(parts) for parts in by_topic.values()),
        partitions_behind=sum(entry.partitions_behind for entry in topics),
        as_of_ms=as_of_ms if as_of_ms is not None else now_ms,
        source_reachable=source_reachable,
        topics=topics[:topics_shown],
    )
