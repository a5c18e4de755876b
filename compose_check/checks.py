"""The end-to-end checks of a running compose stack, each seen from the host as a user would see it."""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import httpx
import yaml
from confluent_kafka import KafkaError, Message, TopicPartition

from compose_check.docker import REPO, ImageFacts, ServiceState
from shared.config.flow import FlowConfig
from shared.flow_topics import FlowTopics
from shared.kafka.factories import confluent_consumer, confluent_producer

PROMETHEUS_CONFIG = REPO / "deploy" / "prometheus" / "prometheus.yml"
DASHBOARD = REPO / "deploy" / "grafana" / "dashboards" / "strait.json"
SAMPLE_SUFFIXES = ("", "_total", "_bucket", "_sum", "_count")


@dataclass(frozen=True)
class Check:
    """One check's outcome, in words a user reads."""

    name: str
    passed: bool
    detail: str


def wait_for(probe: Callable[[], Check], timeout_s: float, interval_s: float = 2.0) -> Check:
    """Repeat `probe` until it passes or time runs out; the last outcome is the answer."""
    deadline = time.monotonic() + timeout_s
    while True:
        outcome = probe()
        if outcome.passed or time.monotonic() >= deadline:
            return outcome
        time.sleep(interval_s)


# -- containers and images -----------------------------------------------------------------------------------
def is_healthy(state: ServiceState) -> bool:
    """Running, and healthy where the service has a health check."""
    return state.state == "running" and state.health in ("", "healthy")


def services_healthy(states: list[ServiceState], expected: Iterable[str]) -> Check:
    """Every expected service runs, and is healthy where it has a health check."""
    by_service = {state.service: state for state in states}
    problems = []
    for service in sorted(expected):
        state = by_service.get(service)
        if state is None:
            problems.append(f"{service}: no container")
        elif not is_healthy(state):
            problems.append(f"{service}: {state.state} {state.health}".strip())
    healthy = sorted(s.service for s in states if s.health == "healthy")
    if problems:
        return Check("every service running and healthy", False, "; ".join(problems))
    return Check("every service running and healthy", True, f"{len(healthy)} healthy: {', '.join(healthy)}")


def images_run_unprivileged(images: list[ImageFacts]) -> Check:
    """Every Strait image names a non-root user."""
    root = [image.ref for image in images if image.runs_as_root]
    users = sorted({image.user for image in images})
    if root:
        return Check("Strait images run as a non-root user", False, f"run as root: {', '.join(root)}")
    return Check("Strait images run as a non-root user", True, f"{len(images)} images, user {', '.join(users)}")


# -- records -------------------------------------------------------------------------------------------------
@dataclass
class SentRecord:
    """A record compose-check produced to the source, and where it landed."""

    seq: int
    key: bytes
    value: bytes
    headers: list[tuple[str, str | bytes]]
    timestamp_ms: int
    partition: int = -1
    offset: int = -1


@dataclass
class RecordTrip:
    """The records of one run: sent to the source topic, and found on the target's remote topic."""

    topic: str
    remote_topic: str
    sent: list[SentRecord] = field(default_factory=list)
    found: dict[int, Message] = field(default_factory=dict)  # seq -> the copy read from the target


def produce_marked(flow: FlowConfig, count: int, run_id: str) -> RecordTrip:
    """Produce `count` records with keys, two headers and explicit timestamps to the flow's first topic."""
    topic = flow.props["topics"].split(",")[0].strip()
    trip = RecordTrip(topic, FlowTopics.for_flow(flow).remote_topic(topic))
    producer = confluent_producer(flow.source_cluster.producer_props(), acks="all")
    base_ms = int(time.time() * 1000) - 60_000
    for seq in range(count):
        record = SentRecord(
            seq=seq,
            key=f"compose-check-{seq}".encode(),
            value=uuid.uuid4().bytes * 4,
            headers=[("compose-check-run", run_id.encode()), ("seq", str(seq).encode())],
            timestamp_ms=base_ms + seq,
        )

        def landed(err: KafkaError | None, msg: Message, record: SentRecord = record) -> None:
            if err is None:
                record.partition, record.offset = msg.partition() or 0, msg.offset() or 0

        producer.produce(
            trip.topic,
            key=record.key,
            value=record.value,
            headers=record.headers,
            timestamp=record.timestamp_ms,
            on_delivery=landed,
        )
        trip.sent.append(record)
    producer.flush(60)
    return trip


def read_copies(flow: FlowConfig, trip: RecordTrip, run_id: str, timeout_s: float) -> None:
    """Read the remote topic on the target from the start until every record of this run is found."""
    consumer = confluent_consumer(
        flow.target_cluster.consumer_props(),
        **{"group.id": f"compose-check-reader-{run_id}", "auto.offset.reset": "earliest", "enable.auto.commit": False},
    )
    consumer.subscribe([trip.remote_topic])
    deadline = time.monotonic() + timeout_s
    try:
        while len(trip.found) < len(trip.sent) and time.monotonic() < deadline:
            for message in consumer.consume(500, timeout=1.0):
                if message.error() is not None:
                    continue
                headers = dict(message.headers() or [])
                if headers.get("compose-check-run") == run_id.encode():
                    trip.found[int(headers["seq"] or b"-1")] = message
    finally:
        consumer.close()


def records_reached_target(trip: RecordTrip, elapsed_s: float) -> Check:
    """Every record arrived once, in its partition, with key, value, headers and timestamp unchanged."""
    name = f"records produced to {trip.topic} on A reach {trip.remote_topic} on B with headers"
    undelivered = [r.seq for r in trip.sent if r.offset < 0]
    if undelivered:
        return Check(name, False, f"{len(undelivered)} of {len(trip.sent)} were not acknowledged by A")
    missing = [r.seq for r in trip.sent if r.seq not in trip.found]
    changed = []
    for record in trip.sent:
        copy = trip.found.get(record.seq)
        if copy is None:
            continue
        seen = (copy.partition(), copy.key(), copy.value(), list(copy.headers() or []), copy.timestamp()[1])
        if seen != (record.partition, record.key, record.value, record.headers, record.timestamp_ms):
            changed.append(record.seq)
    if missing or changed:
        return Check(name, False, f"{len(missing)} missing, {len(changed)} changed of {len(trip.sent)}")
    return Check(
        name,
        True,
        f"{len(trip.sent)} of {len(trip.sent)} within {elapsed_s:.0f} s; partition, key, value, both headers "
        "and timestamp identical",
    )


# -- the translator --------------------------------------------------------------------------------------------
def commit_after_last(flow: FlowConfig, trip: RecordTrip, group: str) -> dict[int, int]:
    """Commit `group` on the source just after this run's last record of each partition; partition -> offset."""
    committed: dict[int, int] = {}
    for record in trip.sent:
        committed[record.partition] = max(committed.get(record.partition, 0), record.offset + 1)
    consumer = confluent_consumer(flow.source_cluster.consumer_props(), **{"group.id": group})
    try:
        consumer.commit(
            offsets=[TopicPartition(trip.topic, p, offset) for p, offset in sorted(committed.items())],
            asynchronous=False,
        )
    finally:
        consumer.close()
    return committed


def expected_target_offsets(trip: RecordTrip) -> dict[int, int]:
    """Where a group committed after the last record resumes on the target: just after that record's copy."""
    expected: dict[int, int] = {}
    for record in trip.sent:
        copy = trip.found[record.seq]
        expected[record.partition] = max(expected.get(record.partition, 0), (copy.offset() or 0) + 1)
    return expected


def translator_answer(translator_url: str, flow: FlowConfig, group: str, trip: RecordTrip) -> Callable[[], Check]:
    """A probe: does the translator's answer for `group` resume exactly after this run's records on B?"""
    name = f"translator answers where {group} resumes on B, exactly"
    expected = expected_target_offsets(trip)
    url = f"{translator_url}/v1/flows/{flow.source}/{flow.target}/offsets"

    def probe() -> Check:
        try:
            response = httpx.get(url, params={"group": group}, timeout=10)
        except httpx.HTTPError as exc:
            return Check(name, False, f"GET {url}: {exc}")
        if response.status_code != 200:
            return Check(name, False, f"GET {url}?group={group}: HTTP {response.status_code} {response.text[:300]}")
        answer = {
            entry["partition"]: entry["offset"]
            for entry in response.json()["offsets"]
            if entry["topic"] == trip.remote_topic
        }
        if answer != expected:
            return Check(name, False, f"answered {answer}, expected {expected} (partition -> offset on B)")
        return Check(name, True, f"HTTP 200, {len(answer)} partitions of {trip.remote_topic}, each at its exact offset")

    return probe


def failover_moves_group(translator_url: str, token: str, flow: FlowConfig, group: str, trip: RecordTrip) -> Check:
    """POST the failover for `group` without the translator's token (refused) and with it; then the group's
    committed offsets on B must be the exact resume points."""
    name = f"failover through the translator commits {group} on B where it resumes (refused without the token)"
    url = f"{translator_url}/v1/flows/{flow.source}/{flow.target}/failover"
    expected = expected_target_offsets(trip)
    try:
        anonymous = httpx.post(url, json={"group": group}, timeout=30)
        if anonymous.status_code != 401:
            return Check(name, False, f"POST {url} without the token: HTTP {anonymous.status_code}, not 401")
        response = httpx.post(url, json={"group": group}, headers={"Authorization": f"Bearer {token}"}, timeout=30)
    except httpx.HTTPError as exc:
        return Check(name, False, f"POST {url}: {exc}")
    if response.status_code != 200 or not response.json().get("applied"):
        return Check(name, False, f"POST {url}: HTTP {response.status_code} {response.text[:300]}")
    consumer = confluent_consumer(flow.target_cluster.consumer_props(), **{"group.id": group})
    try:
        asked = [TopicPartition(trip.remote_topic, partition) for partition in sorted(expected)]
        committed = {tp.partition: tp.offset for tp in consumer.committed(asked, timeout=30)}
    finally:
        consumer.close()
    if committed != expected:
        return Check(name, False, f"committed on B {committed}, expected {expected}")
    detail = f"401 without the token; with it HTTP 200, applied, {len(committed)} partitions at the exact offsets on B"
    return Check(name, True, detail)


# -- Prometheus and the dashboard --------------------------------------------------------------------------------
def scrape_jobs() -> set[str]:
    """The jobs deploy/prometheus/prometheus.yml scrapes."""
    config = yaml.safe_load(PROMETHEUS_CONFIG.read_text())
    return {job["job_name"] for job in config["scrape_configs"]}


def prometheus_targets_up(prometheus_url: str) -> Callable[[], Check]:
    """A probe: is every scrape job's target up in Prometheus?"""
    name = "Prometheus scrapes every service's /metrics"
    jobs = scrape_jobs()

    def probe() -> Check:
        try:
            targets = httpx.get(f"{prometheus_url}/api/v1/targets", timeout=10).json()["data"]["activeTargets"]
        except (httpx.HTTPError, KeyError, ValueError) as exc:
            return Check(name, False, f"{prometheus_url}/api/v1/targets: {exc}")
        up = {t["labels"]["job"] for t in targets if t["health"] == "up"}
        down = {t["labels"]["job"]: t.get("lastError", "") for t in targets if t["labels"]["job"] not in up}
        if jobs - up:
            detail = "; ".join(f"{job}: {down.get(job, 'no target')}" for job in sorted(jobs - up))
            return Check(name, False, f"not up: {detail}")
        return Check(name, True, f"{len(jobs)} jobs up: {', '.join(sorted(jobs))}")

    return probe


def dashboard_metric_names() -> set[str]:
    """The Strait metric names the Grafana dashboard's queries use."""
    queries = [query for panel in dashboard_panel_queries().values() for query in panel]
    return {name for query in queries for name in re.findall(r"strait_\w+", query)}


def dashboard_metrics_scraped(prometheus_url: str) -> Check:
    """Every metric the dashboard charts is one Prometheus has scraped (a series, or a family with no sample yet)."""
    name = "the Grafana dashboard's queries name metrics Prometheus scraped"
    try:
        series = set(httpx.get(f"{prometheus_url}/api/v1/label/__name__/values", timeout=10).json()["data"])
        families = set(httpx.get(f"{prometheus_url}/api/v1/metadata", timeout=10).json()["data"])
    except (httpx.HTTPError, KeyError, ValueError) as exc:
        return Check(name, False, f"{prometheus_url}: {exc}")
    known = series | {family + suffix for family in families for suffix in SAMPLE_SUFFIXES}
    used = dashboard_metric_names()
    missing = sorted(used - known)
    if missing:
        return Check(name, False, f"never scraped: {', '.join(missing)}")
    with_samples = len(used & series)
    return Check(name, True, f"{len(used)} names, {with_samples} with samples, the rest declared (no event yet)")


def dashboard_panel_queries() -> dict[str, list[str]]:
    """Each Grafana panel's title and its PromQL queries, with the dashboard's `$flow` variable at "All"."""
    dashboard = json.loads(DASHBOARD.read_text())
    return {
        panel["title"]: [target["expr"].replace("$flow", ".*") for target in panel["targets"]]
        for panel in dashboard["panels"]
        if panel.get("targets")
    }


def dashboard_panels_answered(prometheus_url: str) -> Callable[[], Check]:
    """A probe: every panel of the dashboard has a query that Prometheus answers with at least one series (a
    panel showing "No data" on a running stack charts a name no service exports, or a label it does not have)."""
    name = "every Grafana panel's queries return data"

    def probe() -> Check:
        empty: list[str] = []
        panels = dashboard_panel_queries()
        for title, queries in panels.items():
            answered = False
            for query in queries:
                try:
                    reply = httpx.get(f"{prometheus_url}/api/v1/query", params={"query": query}, timeout=10).json()
                except (httpx.HTTPError, ValueError) as exc:
                    return Check(name, False, f"{prometheus_url}: {exc}")
                if reply.get("status") != "success":
                    return Check(name, False, f"{title!r}: {query} refused: {reply.get('error')}")
                answered = answered or bool(reply["data"]["result"])
            if not answered:
                empty.append(title)
        if empty:
            return Check(name, False, f"no data in {len(empty)} of {len(panels)} panels: {', '.join(empty)}")
        return Check(name, True, f"{len(panels)} panels answered")

    return probe


def run_id() -> str:
    """A short id that marks this run's records and group."""
    return uuid.uuid4().hex[:12]
