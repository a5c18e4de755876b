"""The translator's answers about a flow's recovery point and DR state: pure, from the index (what reached B).

The RPO is data-mirror's committed position per partition against the source's end its tasks last saw (the progress
topic on the target); whether that is current comes from data-mirror's status: while the source does not answer, the
figures are the last known and say since when.
"""

from __future__ import annotations

from services.offset_translator.flows import FlowKey
from services.offset_translator.index import TranslatorIndex
from services.offset_translator.models import FlowDr, FlowRpo, PartitionRpo
from shared.dr.records import RpoSummary
from shared.dr.rpo import PartitionLag, summarize
from shared.flow_status import summarize_flow
from shared.partition_key import PartitionKey


def partition_lags(index: TranslatorIndex, flow: FlowKey) -> dict[PartitionKey, PartitionLag]:
    """Each copied partition's position against the source's end as data-mirror's tasks last saw it."""
    return {
        key: PartitionLag(
            key[0],
            key[1],
            entry.next_offset,
            entry.report.end_offset if entry.report is not None else None,
            entry.report.behind_since_ms if entry.report is not None else None,
        )
        for key, entry in index.progress[flow].items()
    }


def partition_row(index: TranslatorIndex, flow: FlowKey, lag: PartitionLag, now_ms: int) -> PartitionRpo:
    """One partition as the API shows it."""
    return PartitionRpo(
        topic=lag.topic,
        partition=lag.partition,
        next_offset=lag.next_offset,
        end_offset=lag.end_offset,
        records=lag.records,
        seconds=lag.seconds(now_ms),
        as_of_ms=index.progress[flow][(lag.topic, lag.partition)].written_ms,
    )


def flow_rpo(index: TranslatorIndex, source: str, target: str, now_ms: int, *, partitions: bool) -> FlowRpo:
    """Records and seconds not yet on the target, per topic (and per partition with `partitions`)."""
    flow = index.flow(source, target)
    progress = index.progress[flow.key]
    status = summarize_flow(source, target, index.statuses.statuses(target), now_ms=now_ms)
    reported = status.rpo
    lags = partition_lags(index, flow.key)
    note = None
    as_of, reachable = _freshness(reported, max((p.written_ms or 0 for p in progress.values()), default=0) or None)
    if reported is None:
        note = "no data-mirror reports for this flow: the figures are as of its last committed positions"
    summary = summarize(lags.values(), now_ms=now_ms, as_of_ms=as_of, source_reachable=reachable)
    rows = [partition_row(index, flow.key, lag, now_ms) for _, lag in sorted(lags.items())] if partitions else None
    return FlowRpo(
        flow=flow.name,
        source=source,
        target=target,
        rpo=summary,
        partitions=rows,
        groups_behind=status.groups_behind,
        group_rpo_max_s=status.group_rpo_max_s,
        dr_state=status.dr_state,
        note=note,
    )


def _freshness(reported: RpoSummary | None, last_written_ms: int | None) -> tuple[int | None, bool | None]:
    """(as of when, source answering): data-mirror's own word when it reports, else its last commit."""
    if reported is None:
        return last_written_ms, None
    return reported.as_of_ms, reported.source_reachable


def flow_dr(index: TranslatorIndex, source: str, target: str) -> FlowDr:
    """The flow's DR state and newest report, as read on its target."""
    flow = index.flow(source, target)
    view = index.dr.get(target)
    if view is None:
        return FlowDr(flow=flow.name, state=None, last_report=None)
    return FlowDr(flow=flow.name, state=view.states.get(flow.name), last_report=view.last_report(flow.name))
