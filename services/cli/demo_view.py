"""What the demo shows: per flow its state, records mirrored and behind and heartbeat age (from the services'
status records on strait.status.internal), per sample topic the records on the source and on the target, and
where the offset translator says the demo's consumer group would resume; as a live view or as plain lines."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from services.cli.demo_processes import ServiceProcess
from services.cli.status import statuses_from_clusters
from shared.config import FlowConfig
from shared.flow_context import FlowContext
from shared.flow_status import FlowStatus
from shared.kafka.end_offsets import topic_end_offsets

_STYLE = {"running": "green", "starting": "cyan", "degraded": "yellow", "failed": "red", "stopped": "dim"}


@dataclass(frozen=True, slots=True)
class TopicRow:
    """One sample topic: its records on the source and, under its remote name, on the target."""

    flow: str
    topic: str
    remote_topic: str
    on_source: int | None
    on_target: int | None

    @property
    def behind(self) -> int | None:
        """Records on the source not yet on the target (the remote topic started empty)."""
        if self.on_source is None:
            return None
        return max(0, self.on_source - (self.on_target or 0))


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Everything the view shows, read at `taken_at` (monotonic seconds)."""

    taken_at: float
    flows: list[FlowStatus] = field(default_factory=list)
    topics: list[TopicRow] = field(default_factory=list)
    group_offsets: dict[str, int] = field(default_factory=dict)
    problem: str | None = None

    def flow_mirrored(self, flow: FlowStatus) -> int | None:
        """Records data-mirror copied for `flow` (summed over its live instances), from its status records."""
        counts = [
            instance.details.get("records_mirrored")
            for instance in flow.instances
            if instance.service == "data-mirror" and not instance.stale
        ]
        numbers = [count for count in counts if isinstance(count, int)]
        return sum(numbers) if numbers else None

    def status_trails_target(self) -> bool:
        """True while a flow's data-mirror status counts fewer records than its remote topics hold: the status is
        published every few seconds, so records can land before it counts them (the demo's topics start empty)."""
        for flow in self.flows:
            on_target = sum(row.on_target or 0 for row in self.topics if row.flow == flow.flow)
            if on_target and (self.flow_mirrored(flow) or 0) < on_target:
                return True
        return False

    def service_state(self, service: str) -> str | None:
        """The worst state the service's instances report (over all flows), None before its first status."""
        states = [i.state for flow in self.flows for i in flow.instances if i.service == service]
        for state in ("failed", "degraded", "starting", "running", "stopped"):
            if state in states:
                return state
        return states[0] if states else None


def collect(flows: Sequence[FlowConfig], topics: Sequence[str], translator_url: str | None, group: str) -> Snapshot:
    """Read the status records, end offsets on both sides and the translator's answer for `group`."""
    rows: list[TopicRow] = []
    try:
        statuses = statuses_from_clusters(tuple(flows), stale_after_s=30)
        for flow in flows:
            rule = FlowContext.of(flow).topics
            remote = {topic: rule.remote_topic(topic) for topic in topics}
            on_source = topic_end_offsets(flow.source_admin_props(), topics, timeout_s=5)
            on_target = topic_end_offsets(flow.target_admin_props(), list(remote.values()), timeout_s=5)
            rows += [
                TopicRow(flow.name, topic, remote[topic], on_source[topic], on_target[remote[topic]])
                for topic in topics
            ]
    except Exception as exc:  # the view keeps going while a cluster is slow; say why it is stale
        return Snapshot(time.monotonic(), problem=f"could not read status: {exc}")
    offsets = _group_offsets(translator_url, flows[0], group) if translator_url and flows else {}
    return Snapshot(time.monotonic(), statuses, rows, offsets)


def _group_offsets(url: str, flow: FlowConfig, group: str) -> dict[str, int]:
    """remote topic -> sum over its partitions of where `group` resumes on the target; empty until checkpointed."""
    try:
        response = httpx.get(f"{url}/v1/flows/{flow.source}/{flow.target}/offsets", params={"group": group}, timeout=3)
    except httpx.HTTPError:
        return {}
    if response.status_code != 200:
        return {}
    resumes: dict[str, int] = {}
    for row in response.json().get("offsets", []):
        resumes[row["topic"]] = resumes.get(row["topic"], 0) + int(row["offset"])
    return resumes


class SnapshotCollector(threading.Thread):
    """Refreshes `latest` every `interval_s` in the background, so Ctrl-C is never stuck behind a Kafka call."""

    def __init__(self, read: Callable[[], Snapshot], interval_s: float) -> None:
        super().__init__(name="demo-status", daemon=True)
        self._read = read
        self._interval_s = interval_s
        self._stop_event = threading.Event()
        self.latest: Snapshot | None = None

    def run(self) -> None:
        """Read, publish, wait; until stopped."""
        while not self._stop_event.is_set():
            self.latest = self._read()
            self._stop_event.wait(self._interval_s)

    def stop(self) -> None:
        """Stop after the read in progress (bounded)."""
        self._stop_event.set()
        if self.is_alive():
            self.join(timeout=30)


def _num(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _age(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.1f}s"


def render(
    snapshot: Snapshot | None, services: Sequence[ServiceProcess], header: Mapping[str, str], footer: str
) -> RenderableType:
    """The live view: flows, sample topics, services, then where to look next."""
    parts: list[RenderableType] = [Text.assemble(*(f"{key}: {value}\n" for key, value in header.items()))]
    if snapshot is None:
        parts.append(Text("reading status ...", "cyan"))
    else:
        parts += [_flows_table(snapshot), _topics_table(snapshot)]
        if snapshot.problem:
            parts.append(Text(snapshot.problem, "yellow"))
    parts += [_services_table(snapshot, services), Text(footer, "dim")]
    return Group(*parts)


def _flows_table(snapshot: Snapshot) -> Table:
    table = Table(title="flows", title_justify="left")
    for column in ("flow", "state", "topics", "records mirrored", "records behind", "heartbeat age"):
        table.add_column(column, justify="left" if column in ("flow", "state") else "right")
    for flow in snapshot.flows:
        table.add_row(
            flow.flow,
            Text(flow.state, _STYLE.get(flow.state, "")),
            _num(flow.topics),
            _num(snapshot.flow_mirrored(flow)),
            _num(flow.records_behind),
            _age(flow.heartbeat_age_s),
        )
    return table


def _topics_table(snapshot: Snapshot) -> Table:
    table = Table(title="sample topics", title_justify="left")
    for column in ("topic", "on source", "remote topic", "on target", "behind", "demo group resumes at"):
        table.add_column(column, justify="left" if "topic" in column else "right")
    for row in snapshot.topics:
        table.add_row(
            row.topic,
            _num(row.on_source),
            row.remote_topic,
            _num(row.on_target),
            _num(row.behind),
            _num(snapshot.group_offsets.get(row.remote_topic)),
        )
    return table


def _services_table(snapshot: Snapshot | None, services: Sequence[ServiceProcess]) -> Table:
    table = Table(title="services", title_justify="left")
    for column in ("service", "pid", "process", "reported state", "metrics"):
        table.add_column(column)
    for service in services:
        code = service.exit_code()
        process = Text("running", "green") if code is None else Text(f"exited ({code})", "red")
        state = snapshot.service_state(service.name) if snapshot is not None else None
        table.add_row(
            service.name,
            str(service.pid or "-"),
            process,
            Text(state or "-", _STYLE.get(state or "", "")),
            f"{service.url}/metrics",
        )
    return table


def plain_lines(snapshot: Snapshot | None, services: Sequence[ServiceProcess], elapsed_s: float) -> list[str]:
    """The same figures as one line per flow plus one per topic, for logs and non-interactive terminals."""
    stamp = f"[{elapsed_s:6.0f}s]"
    exited = [f"{s.name} exited ({s.exit_code()})" for s in services if s.exit_code() is not None]
    if snapshot is None:
        return [f"{stamp} reading status ...", *exited]
    lines = [f"{stamp} {flow_line(flow, snapshot)}" for flow in snapshot.flows]
    lines += [topic_line(row, snapshot.group_offsets) for row in snapshot.topics]
    if snapshot.problem:
        lines.append(f"{stamp} {snapshot.problem}")
    return lines + exited


def flow_line(flow: FlowStatus, snapshot: Snapshot) -> str:
    """`A->B running: topics 4, records mirrored 1,200, records behind 0, heartbeat age 0.4s`."""
    return (
        f"{flow.flow} {flow.state}: topics {_num(flow.topics)}, records mirrored {_num(snapshot.flow_mirrored(flow))}, "
        f"records behind {_num(flow.records_behind)}, heartbeat age {_age(flow.heartbeat_age_s)}"
    )


def topic_line(row: TopicRow, group_offsets: Mapping[str, Any] | None = None) -> str:
    """`  orders -> A.orders: 120 on source, 118 on target (2 behind)`, plus the demo group's resume point."""
    resume = (group_offsets or {}).get(row.remote_topic)
    suffix = f"; demo group resumes at {resume:,}" if isinstance(resume, int) else ""
    return (
        f"  {row.flow} {row.topic} -> {row.remote_topic}: {_num(row.on_source)} on source, "
        f"{_num(row.on_target)} on target ({_num(row.behind)} behind){suffix}"
    )
