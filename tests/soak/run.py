"""One soak run from start to verdict: clusters, services, traffic with random faults, catch-up, comparison."""

from __future__ import annotations

import dataclasses
import random
import shutil
import signal
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from shared.config import load_mm2_config
from shared.control import read_statuses
from shared.kafka.factories import confluent_admin
from shared.localkafka import KafkaCluster
from shared.localkafka.fault_proxy import FaultProxy
from shared.verify.flow_check import VerifyScope, verify_flow
from tests.soak import markdown
from tests.soak.catchup import wait_caught_up
from tests.soak.clusters import (
    GROUP,
    SOURCE,
    TARGET,
    create_source_topics,
    remote_name,
    start_clusters,
    topic_names,
    write_config,
)
from tests.soak.compare import SoakError, compare_topic
from tests.soak.consumer import GroupConsumer, committed_offsets
from tests.soak.events import EventLog
from tests.soak.faults import LONG_DARK_AT, FaultInjector, check_brokers
from tests.soak.fleet import Fleet
from tests.soak.options import SoakOptions
from tests.soak.producer import SteadyProducer
from tests.soak.report import SoakResult
from tests.soak.translation import wait_for_checkpoints

CATCHUP_TIMEOUT_S = 600
CHECKPOINT_TIMEOUT_S = 180
PROGRESS_EVERY_S = 60


class Soak:
    """Holds what a run started, so that `cleanup` can stop all of it whatever happened."""

    def __init__(self, options: SoakOptions) -> None:
        self.options = options
        self.workdir = Path(tempfile.mkdtemp(prefix="strait-soak-"))
        self.events = EventLog()
        self.result = SoakResult(options, datetime.now(UTC), log_dir=self.workdir)
        self.clusters: list[KafkaCluster] = []
        self.proxy: FaultProxy | None = None
        self.fleet: Fleet | None = None
        self.producer: SteadyProducer | None = None
        self.consumer: GroupConsumer | None = None
        self.topics = topic_names(options.topics)
        self._started = time.monotonic()

    def run(self) -> SoakResult:
        """Set up, soak, verify; the result (also when a step failed: `aborted` says which)."""
        try:
            self._setup()
            self._traffic()
            self._verify()
        except Exception as exc:  # any failed step ends the run with a FAIL result naming it
            self.result.aborted = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
            self.events.record("aborted", self.result.aborted)
        self.result.events = self.events.all()
        self.result.total_s = time.monotonic() - self._started
        return self.result

    def _setup(self) -> None:
        if self.options.network_faults:
            self.proxy = FaultProxy(self.workdir / "toxiproxy").start()
        source, target = start_clusters(self.workdir, self.proxy)
        self.clusters = [source, target]
        self.events.record("setup", f"clusters A ({source.bootstrap_servers}) and B ({target.bootstrap_servers}) up")
        create_source_topics(source, self.topics, self.options.partitions)
        # The checks read both clusters directly; the services go through the fault proxy when there is one.
        self.config = write_config(self.workdir / "direct.properties", source, target)
        services = write_config(self.workdir / "mm2.properties", source, target, through_proxy=self.proxy is not None)
        log_dir = self.workdir / "logs"
        log_dir.mkdir()
        self.fleet = Fleet(services, log_dir, self.events)
        self.result.services = self.fleet.names()
        self.fleet.start_all(after_topic_sync=lambda: _wait_for_topics(target, [remote_name(t) for t in self.topics]))
        self.events.record("setup", f"services ready: {', '.join(self.fleet.names())}")

    def _traffic(self) -> None:
        assert self.fleet is not None
        source = self.clusters[0]
        self.producer = SteadyProducer(
            source.client_properties(),
            self.topics,
            self.options.partitions,
            self.options.rate,
            on_note=self.events.record,
        ).start()
        self.consumer = GroupConsumer(source.client_properties(), GROUP, self.topics).start()
        self.events.restart_clock()
        self.events.record("traffic", f"producing {self.options.rate} records/s; group {GROUP} consuming")
        traffic_s = self.options.minutes * 60
        consumer_stop_s = traffic_s - min(30.0, traffic_s / 10)
        rng = random.Random(self.options.seed)
        injector = FaultInjector(rng, self.clusters, self.fleet, self.events, network=self.proxy is not None)
        next_fault_s = rng.uniform(*self.options.fault_gap_s)
        # (after second, cluster): with network faults, each side goes dark once past the delivery timeout.
        long_dark = [(traffic_s * f, c) for f, c in zip(LONG_DARK_AT, self.clusters, strict=True)] if self.proxy else []
        next_progress_s = float(PROGRESS_EVERY_S)
        consumer_running = True
        while (now := self.events.elapsed_s()) < traffic_s:
            if consumer_running and now >= consumer_stop_s:
                self._stop_consumer()
                consumer_running = False
            self._supervise()
            if now >= next_fault_s:
                if long_dark and now >= long_dark[0][0]:
                    injector.inject_long_black_hole(long_dark.pop(0)[1])
                else:
                    injector.inject()
                next_fault_s = self.events.elapsed_s() + rng.uniform(*self.options.fault_gap_s)
            if now >= next_progress_s:
                self._progress()
                next_progress_s = now + PROGRESS_EVERY_S
            time.sleep(1)
        if consumer_running:
            self._stop_consumer()
        self.result.traffic_s = self.events.elapsed_s()
        self.producer.stop()
        self.events.record(
            "traffic", f"producer stopped: {self.producer.sent} sent, {self.producer.ledger.count} acked"
        )

    def _stop_consumer(self) -> None:
        assert self.consumer is not None
        self.consumer.stop()
        self.events.record("traffic", f"group {GROUP} stopped after {self.consumer.consumed} records")

    def _supervise(self) -> None:
        assert self.fleet is not None
        self.fleet.supervise()
        check_brokers(self.clusters, self.events)

    def _progress(self) -> None:
        assert self.producer is not None
        assert self.consumer is not None
        print(
            f"[soak t={self.events.elapsed_s():7.1f}s] progress: sent={self.producer.sent} "
            f"acked={self.producer.ledger.count} failed={self.producer.failed} consumed={self.consumer.consumed}",
            flush=True,
        )

    def _verify(self) -> None:
        assert self.fleet is not None
        assert self.producer is not None
        assert self.consumer is not None
        result, (source, target) = self.result, self.clusters
        result.sent, result.acked, result.failed = self.producer.sent, self.producer.ledger.count, self.producer.failed
        result.failure_kinds, result.unacknowledged = self.producer.failure_kinds, self.producer.unacknowledged
        result.producer_clients, result.consumed = self.producer.clients, self.consumer.consumed
        pairs = [(topic, remote_name(topic)) for topic in self.topics]
        started = time.monotonic()
        result.caught_up = wait_caught_up(
            source.client_properties(),
            target.client_properties(),
            pairs,
            self.options.partitions,
            CATCHUP_TIMEOUT_S,
            tick=self._supervise,
        )
        result.catchup_s = time.monotonic() - started
        self.events.record("verify", f"mirror {'caught up' if result.caught_up else 'did NOT catch up'}")
        result.committed = committed_offsets(source.client_properties(), GROUP, self.topics, self.options.partitions)
        result.points = wait_for_checkpoints(self.fleet.translator_url, GROUP, result.committed, CHECKPOINT_TIMEOUT_S)
        self.events.record("verify", f"translator answers for {len(result.points)} partition(s); comparing records")
        verification = verify_flow(load_mm2_config(self.config).flow_named(f"{SOURCE}->{TARGET}"), VerifyScope())
        self.events.record("verify", f"strait verify: {verification.totals.as_json()}")
        for topic, remote in pairs:
            points = {p: point for (t, p), point in result.points.items() if t == topic and (t, p) in result.committed}
            comparison = compare_topic(
                source.client_properties(),
                target.client_properties(),
                topic,
                remote,
                self.options.partitions,
                self.producer.ledger,
                points,
            )
            findings = [f for f in verification.findings if f.topic == topic]
            comparison = dataclasses.replace(comparison, verified=findings)
            result.topics.append(comparison)
            self.events.record("verify", comparison.report.line(topic))
        result.audit = audit_counts(target.client_properties())
        self.events.record("verify", f"audit (its current instance): {result.audit}")
        result.kills, result.exits = self.fleet.kills, self.fleet.exits
        result.stop_codes = self.fleet.stop_all()
        result.error_lines = self.fleet.error_lines()

    def cleanup(self) -> None:
        """Stop every thread, process and broker this run started; keep the files unless the run passed."""
        previous = {signum: signal.signal(signum, signal.SIG_IGN) for signum in (signal.SIGINT, signal.SIGTERM)}
        try:
            if self.producer is not None:
                self.producer.close()
            if self.consumer is not None:
                self.consumer.stop(timeout_s=15)
            if self.fleet is not None:
                self.fleet.kill_all()
            for cluster in self.clusters:
                cluster.stop()
            if self.proxy is not None:
                self.proxy.stop()
            if self.result.passed and not self.options.keep_logs:
                shutil.rmtree(self.workdir, ignore_errors=True)
            else:
                print(f"soak: brokers' and services' logs kept in {self.workdir}", flush=True)
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)


def _wait_for_topics(cluster: KafkaCluster, names: list[str], timeout_s: float = 180) -> None:
    """Block until topic-sync created every remote topic on the target."""
    admin = confluent_admin(cluster.client_properties())
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if set(names) <= set(admin.list_topics(timeout=10).topics):
            return
        time.sleep(1)
    raise SoakError(f"topic-sync did not create {names} on {cluster.name} within {timeout_s}s")


def write_result(result: SoakResult, path: Path) -> None:
    """Print the summary and write the markdown file."""
    print(result.summary(), flush=True)
    markdown.write(result, path)
    print(f"soak: result written to {path}", flush=True)


def audit_counts(props: dict[str, str]) -> dict[str, object]:
    """What the running audit instance reports in its status (it counts from its own start: a kill resets it)."""
    statuses = [s for s in read_statuses(props).values() if s.service == "audit" and s.state != "stopped"]
    newest = max(statuses, key=lambda s: s.ts, default=None)
    if newest is None:
        return {}
    audit = newest.details.get("audit")
    return {"state": newest.state, **(audit if isinstance(audit, dict) else {})}
