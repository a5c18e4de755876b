"""Pages of a flow's partitions and consumer groups for the cockpit: filtered, sorted and cut on the server, so a
flow of thousands of partitions costs the browser one page. Pure, from the index."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from services.offset_translator.cockpit_models import GroupPage, GroupSummary, PartitionPage, PartitionSort
from services.offset_translator.dr_queries import partition_lags, partition_row
from services.offset_translator.index import TranslatorIndex
from shared.dr.rpo import PartitionLag, summarize

MAX_PAGE = 500


def _matches(text: str, needle: str) -> bool:
    return needle in text.lower()


def _partition_order(sort: PartitionSort, now_ms: int) -> Callable[[PartitionLag], Any]:
    """The key a column sorts by; unknown figures (None) sort below every known one, ties by topic-partition."""
    figures: dict[str, Callable[[PartitionLag], float | int | None]] = {
        "records": lambda lag: lag.records,
        "seconds": lambda lag: lag.seconds(now_ms),
        "next_offset": lambda lag: lag.next_offset,
        "end_offset": lambda lag: lag.end_offset,
    }
    if sort == "topic":
        return lambda lag: (lag.topic, lag.partition)
    figure = figures[sort]

    def key(lag: PartitionLag) -> tuple[bool, float, str, int]:
        value = figure(lag)
        return (value is not None, float(value or 0), lag.topic, lag.partition)

    return key


def partition_page(
    index: TranslatorIndex,
    source: str,
    target: str,
    now_ms: int,
    *,
    query: str = "",
    sort: PartitionSort = "topic",
    desc: bool = False,
    offset: int = 0,
    limit: int = 50,
) -> PartitionPage:
    """The partitions whose `topic-partition` contains `query` (any case), sorted, from `offset`, at most `limit`."""
    flow = index.flow(source, target)
    lags = partition_lags(index, flow.key)
    needle = query.strip().lower()
    matched = [lag for lag in lags.values() if _matches(f"{lag.topic}-{lag.partition}", needle)]
    matched.sort(key=_partition_order(sort, now_ms), reverse=desc)
    rows = [partition_row(index, flow.key, lag, now_ms) for lag in matched[offset : offset + limit]]
    topics = summarize(lags.values(), now_ms=now_ms, topics_shown=len(lags) or 1).topics
    return PartitionPage(
        flow=flow.name,
        total=len(lags),
        matched=len(matched),
        offset=offset,
        limit=limit,
        sort=sort,
        desc=desc,
        topics=topics,
        partitions=rows,
    )


def group_page(
    index: TranslatorIndex, source: str, target: str, now_ms: int, *, query: str = "", offset: int = 0, limit: int = 50
) -> GroupPage:
    """The groups whose name contains `query` (any case), by name, with their checkpoints' count and ages."""
    flow = index.flow(source, target)
    index.require_checkpoints(flow)
    groups = index.checkpoints.groups(flow.key)
    needle = query.strip().lower()
    names = sorted(name for name in groups if _matches(name, needle))
    summaries = []
    for name in names[offset : offset + limit]:
        stamps = [entry.timestamp_ms for entry in groups[name].values()]
        summaries.append(
            GroupSummary(
                group=name,
                partitions=len(stamps),
                newest_age_s=round(max(0.0, (now_ms - max(stamps)) / 1000), 1),
                oldest_age_s=round(max(0.0, (now_ms - min(stamps)) / 1000), 1),
            )
        )
    return GroupPage(
        flow=flow.name, total=len(groups), matched=len(names), offset=offset, limit=limit, groups=summaries
    )
