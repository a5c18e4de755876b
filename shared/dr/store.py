"""Read and write `strait.dr.internal` on a flow's target (blocking): the commands and the translator's actions."""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.config import FlowConfig
from shared.control.topic_names import DR_READER_GROUP, DR_TOPIC
from shared.dr.records import DrReport, FlowDrState, decode_record, encode_record, report_key, state_key
from shared.flow_context import FlowContext
from shared.kafka.partition_reader import read_to_end
from shared.kafka.record_writer import RecordWriter
from shared.kafka.topic_admin import TopicAdmin
from shared.kafka.topics import ROLLED_COMPACTED


@dataclass
class DrView:
    """Every flow's latest state and every report on one cluster, reports in the order they were written."""

    states: dict[str, FlowDrState] = field(default_factory=dict)
    reports: dict[tuple[str, str], DrReport] = field(default_factory=dict)

    def apply(self, record: FlowDrState | DrReport) -> None:
        if isinstance(record, FlowDrState):
            self.states[record.flow] = record
        else:
            self.reports.pop((record.flow, record.id), None)  # a newer copy of a report goes last
            self.reports[(record.flow, record.id)] = record

    def last_report(self, flow: str) -> DrReport | None:
        """The newest report of `flow` (failover or failback)."""
        mine = [report for (name, _), report in self.reports.items() if name == flow]
        return mine[-1] if mine else None


class DrStore:
    """One flow's DR records on its target cluster."""

    def __init__(self, flow: FlowConfig, *, timeout_s: float = 30) -> None:
        self.flow = flow
        self._timeout_s = timeout_s
        self._replication_factor = FlowContext.of(flow).internal_replication_factor

    def read(self) -> DrView:
        """Everything the topic holds now (empty when it does not exist yet)."""
        view = DrView()
        records = read_to_end(
            self.flow.target_consumer_props(), DR_TOPIC, group_id=DR_READER_GROUP, timeout_s=self._timeout_s
        )
        for record in records:
            decoded = decode_record(record.value, offset=record.offset)
            if decoded is not None:
                view.apply(decoded)
        return view

    def state(self) -> FlowDrState | None:
        """The flow's latest state; None when no DR action ever ran (the flow is active)."""
        return self.read().states.get(self.flow.name)

    def write(self, *records: FlowDrState | DrReport) -> None:
        """Write `records` in order and wait until the target has them (the topic is made on first use)."""
        TopicAdmin(self.flow.target, self.flow.target_admin_props(), timeout_s=self._timeout_s).ensure_internal_topic(
            DR_TOPIC, replication_factor=self._replication_factor, configs=ROLLED_COMPACTED
        )
        writer = RecordWriter(self.flow.target, self.flow.target_producer_props())
        try:
            writer.write(
                DR_TOPIC,
                [(_key(record), encode_record(record)) for record in records],
                timeout_s=self._timeout_s,
            )
        finally:
            writer.close(self._timeout_s)


def _key(record: FlowDrState | DrReport) -> bytes:
    return state_key(record.flow) if isinstance(record, FlowDrState) else report_key(record.flow, record.id)
