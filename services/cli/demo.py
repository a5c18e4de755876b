"""`strait demo`: two local Kafka clusters, all seven services, sample traffic and a live status view.

The clusters run as broker processes of this process (shared.localkafka, started from the main thread, so
the kernel stops them if the demo dies); each service is a process of its own reading a copy of the sample
config with the clusters' addresses added. Ctrl-C (or SIGTERM, or the end of --duration) stops the traffic,
shows where replication got to, SIGTERMs every service, waits for them, then stops the clusters.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Annotated

import typer
from rich.console import Console
from rich.live import Live

from services.cli.demo_processes import SERVICES, ServiceFailedError, ServiceProcess, stop_all, wait_ready
from services.cli.demo_traffic import DEMO_GROUP, SampleConsumer, SampleProducer, create_sample_topics, sample_topics
from services.cli.demo_view import Snapshot, SnapshotCollector, collect, flow_line, plain_lines, render
from shared.config import MirrorMakerConfig, load_mm2_config
from shared.errors import StraitError
from shared.localkafka import KafkaCluster, kafka_classpath
from shared.localkafka.jars import REPO_ROOT
from shared.localkafka.ports import free_port
from shared.native_output import relay_native_stderr

SAMPLE_CONFIG = REPO_ROOT / "deploy" / "config" / "local-two-cluster.properties"
READY_TIMEOUT_S = 240
STOP_TIMEOUT_S = 60
CATCH_UP_S = 20
PLAIN_EVERY_S = 5


def say(message: str) -> None:
    """One progress line, at once (the output may be a pipe)."""
    print(message, flush=True)


class StopRequested(KeyboardInterrupt):
    """Ctrl-C or SIGTERM arrived: stop everything."""


def _interrupt(signum: int, _frame: FrameType | None) -> None:
    raise StopRequested(signal.Signals(signum).name)


def _still_stopping(_signum: int, _frame: FrameType | None) -> None:
    say("still stopping: services get up to a minute to finish, then they are killed")


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """Children started inside inherit an ignored SIGINT (the JVM keeps it), so Ctrl-C reaches only the demo."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def write_config(template: Path, clusters: dict[str, KafkaCluster], path: Path) -> Path:
    """A copy of `template` with the started clusters' addresses added (later keys win in a properties file)."""
    lines = [f"{alias}.bootstrap.servers = {cluster.bootstrap_servers}" for alias, cluster in clusters.items()]
    path.write_text(f"{template.read_text()}\n# Added by `strait demo`: the clusters it started.\n" + "\n".join(lines))
    return path


def _footer(elapsed_s: float, deadline: float | None) -> str:
    if deadline is None:
        return f"replicating for {elapsed_s:.0f}s; Ctrl-C stops everything"
    left_s = max(0.0, deadline - time.monotonic())
    return f"replicating for {elapsed_s:.0f}s; stops by itself in {left_s:.0f}s (or Ctrl-C)"


class Demo:
    """One run: start everything, show replication until told to stop, stop everything."""

    def __init__(self, template: Path, duration_s: float, live: bool, rate_per_s: float, keep_logs: bool) -> None:
        self.template = template
        self.duration_s = duration_s
        self.live = live
        self.rate_per_s = rate_per_s
        self.keep_logs = keep_logs
        self.workdir: Path | None = None  # created once the template config is known to be valid
        self.clusters: dict[str, KafkaCluster] = {}
        self.services: list[ServiceProcess] = []
        self.producers: list[SampleProducer] = []
        self.consumers: list[SampleConsumer] = []
        self.collector: SnapshotCollector | None = None
        self.config: MirrorMakerConfig | None = None
        self.failure: str | None = None

    def run(self) -> int:
        """Run until --duration, Ctrl-C or SIGTERM; 0 when everything started, replicated and stopped cleanly."""
        # Installed explicitly: a shell starts background jobs with SIGINT ignored, and Ctrl-C must still work.
        previous = {signum: signal.signal(signum, _interrupt) for signum in (signal.SIGINT, signal.SIGTERM)}
        # The demo's own librdkafka clients (sample traffic, the status view's lookups) write to stderr; through
        # the relay an outage is a line per cause a minute there, not ~20 a second over the status view.
        relay_native_stderr()
        try:
            self._start()
            self._show()
        except KeyboardInterrupt as exc:
            say(f"\nstopping ({exc.args[0] if exc.args else 'SIGINT'})")
        except (StraitError, ServiceFailedError, OSError) as exc:
            self.failure = str(exc)
            say(f"\ndemo failed: {exc}")
        finally:
            signal.signal(signal.SIGINT, _still_stopping)
            signal.signal(signal.SIGTERM, _still_stopping)
            try:
                self._stop()
            finally:
                for signum, handler in previous.items():
                    signal.signal(signum, handler)
        return 1 if self.failure else 0

    @property
    def config_path(self) -> Path:
        """The copy of the template with the started clusters' addresses."""
        assert self.workdir is not None
        return self.workdir / "strait-demo.properties"

    # -- start -------------------------------------------------------------------------------------------
    def _start(self) -> None:
        template_config = load_mm2_config(self.template)
        self.workdir = Path(tempfile.mkdtemp(prefix="strait-demo-"))
        say(f"Strait demo: config {self.template}, work directory {self.workdir}")
        aliases = list(template_config.clusters)
        say("[1/4] Kafka runtime (resolved by Maven the first time)")
        jars = kafka_classpath().count(":") + 1
        say(f"      {jars} jars ready")
        say(f"[2/4] starting Kafka clusters {', '.join(aliases)} (KRaft, one broker each, on 127.0.0.1)")
        started = time.monotonic()
        self.clusters = {alias: KafkaCluster(alias) for alias in aliases}
        with _sigint_ignored():
            for cluster in self.clusters.values():
                cluster.launch()
        for alias, cluster in self.clusters.items():
            cluster.wait_ready()
            say(f"      {alias} ready at {cluster.bootstrap_servers} ({time.monotonic() - started:.1f}s)")
        self.config = load_mm2_config(write_config(self.template, self.clusters, self.config_path))
        flows = self.config.enabled_flows
        if not flows:
            raise StraitError(f"{self.template} enables no flow (set e.g. A->B.enabled=true)")
        for flow in flows:
            create_sample_topics(flow.source_admin_props(), sample_topics(flow))
        self._start_services()

    def _start_services(self) -> None:
        assert self.workdir is not None
        log_dir = self.workdir / "logs"
        say(f"[3/4] starting {len(SERVICES)} services, one process each (logs in {log_dir})")
        for spec in SERVICES:
            service = ServiceProcess(spec, self.config_path, log_dir, free_port())
            service.start()
            self.services.append(service)
            say(f"      {service.name:<17} pid {service.pid:<7} {service.url}")
        say("      waiting until each answers /ready (Spark takes longest)")
        late = wait_ready(
            self.services,
            READY_TIMEOUT_S,
            lambda service: say(f"      {service.name:<17} ready after {service.ready_after_s:.1f}s"),
        )
        for service in late:
            say(f"      {service.name:<17} not ready after {READY_TIMEOUT_S}s; carrying on (see {service.log_path})")
        if (url := self._translator_url()) is not None:
            say(f"      cockpit: {url}/ui/ (open it in a browser: health, RPO, the audit, failover)")

    # -- show --------------------------------------------------------------------------------------------
    def _translator_url(self) -> str | None:
        return next((s.url for s in self.services if s.name == "offset-translator"), None)

    def _start_traffic(self) -> None:
        assert self.config is not None
        by_source: dict[str, tuple[dict[str, str], tuple[str, ...]]] = {}
        for flow in self.config.enabled_flows:
            props, topics = by_source.get(flow.source, (flow.source_producer_props(), ()))
            by_source[flow.source] = (props, tuple(dict.fromkeys((*topics, *sample_topics(flow)))))
        for alias, (props, topics) in by_source.items():
            self.producers.append(SampleProducer(props, topics, self.rate_per_s))
            self.consumers.append(SampleConsumer(self.config.cluster(alias).consumer_props(), topics))
            say(
                f"[4/4] producing {self.rate_per_s:g} records/s with headers into {', '.join(topics)} on {alias}; "
                f"consumer group {DEMO_GROUP} reads them there"
            )
        for thread in (*self.producers, *self.consumers):
            thread.start()

    def _read(self) -> Snapshot:
        assert self.config is not None
        flows = self.config.enabled_flows
        topics = list(dict.fromkeys(topic for flow in flows for topic in sample_topics(flow)))
        return collect(flows, topics, self._translator_url(), DEMO_GROUP)

    def _header(self) -> dict[str, str]:
        url = self._translator_url() or "-"
        header = {alias: cluster.bootstrap_servers for alias, cluster in self.clusters.items()}
        flow = self.config.enabled_flows[0] if self.config else None
        header["translator"] = url
        header["cockpit"] = f"{url}/ui/" if self._translator_url() else "-"
        if flow is not None:
            header["try"] = (
                f"strait translate --translator {url} --group {DEMO_GROUP} --from {flow.source} --to {flow.target}"
            )
        header["status"] = f"strait status --config {self.config_path}"
        return header

    def _show(self) -> None:
        self._start_traffic()
        self.collector = SnapshotCollector(self._read, interval_s=2)
        self.collector.start()
        started = time.monotonic()
        deadline = started + self.duration_s if self.duration_s else None
        if self.live:
            with Live(console=Console(), refresh_per_second=2) as view:
                while not self._should_end(deadline):
                    footer = _footer(time.monotonic() - started, deadline)
                    view.update(render(self.collector.latest, self.services, self._header(), footer))
                    time.sleep(0.5)
        else:
            for key, value in self._header().items():
                say(f"{key}: {value}")
            say(_footer(0, deadline))
            next_print = started
            while not self._should_end(deadline):
                if time.monotonic() >= next_print:
                    for line in plain_lines(self.collector.latest, self.services, time.monotonic() - started):
                        say(line)
                    next_print += PLAIN_EVERY_S
                time.sleep(0.5)

    def _should_end(self, deadline: float | None) -> bool:
        crashed = next((s for s in self.services if s.exited_unexpectedly()), None)
        if crashed is not None:
            self.failure = f"{crashed.name} exited with code {crashed.exit_code()}"
            say(f"\n{self.failure}; its log ({crashed.log_path}) ends with:\n{crashed.log_tail()}")
            return True
        return deadline is not None and time.monotonic() >= deadline

    # -- stop --------------------------------------------------------------------------------------------
    def _stop(self) -> None:
        for producer in self.producers:
            producer.stop()
        for consumer in self.consumers:
            consumer.stop()
        if self.producers and self.failure is None:
            self._summary()
        if self.collector is not None:
            self.collector.stop()
        if self.services:
            say(f"stopping {len(self.services)} services (SIGTERM, then waiting for each)")
            for name, code in stop_all(self.services, STOP_TIMEOUT_S).items():
                say(f"      {name:<17} " + ("killed: did not stop in time" if code is None else f"exit code {code}"))
                if code != 0 and self.failure is None:
                    self.failure = f"{name} did not stop cleanly"
        if self.clusters:
            say(f"stopping Kafka clusters {', '.join(self.clusters)}")
            for cluster in self.clusters.values():
                cluster.stop()
        left = [s.name for s in self.services if s.exit_code() is None]
        left += [f"broker {c.name}" for c in self.clusters.values() if any(n.process.is_running() for n in c.nodes)]
        if left:
            self.failure = self.failure or f"still running: {', '.join(left)}"
        if self.workdir is not None and (self.failure or self.keep_logs):
            say(f"logs and config kept in {self.workdir}")
        elif self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
        say("stopped; nothing left running" if not left else f"still running: {', '.join(left)}")

    def _summary(self) -> None:
        """Wait (bounded) for the target to hold every record produced and the status to count them, then say
        what arrived."""
        deadline = time.monotonic() + CATCH_UP_S
        snapshot = self._read()
        while time.monotonic() < deadline and (
            snapshot.problem or any(row.behind for row in snapshot.topics) or snapshot.status_trails_target()
        ):
            time.sleep(1)
            snapshot = self._read()
        say("summary:")
        for flow in snapshot.flows:
            say(f"  {flow_line(flow, snapshot)}")
        for row in snapshot.topics:
            resume = snapshot.group_offsets.get(row.remote_topic)
            say(
                f"  {row.flow} {row.topic} -> {row.remote_topic}: {row.on_target or 0:,} records mirrored "
                f"({row.on_source or 0:,} produced on the source, {row.behind or 0:,} behind)"
                + (f"; group {DEMO_GROUP} resumes there at {resume:,}" if resume is not None else "")
            )


def register(app: typer.Typer) -> None:
    """Add `demo` to the `strait` command."""

    @app.command("demo")
    def demo(
        duration_s: Annotated[
            float, typer.Option("--duration", min=0, help="stop by itself after SECONDS of replication (0: Ctrl-C)")
        ] = 0,
        no_live: Annotated[bool, typer.Option("--no-live", help="plain lines every few seconds, no live view")] = False,
        config: Annotated[
            Path, typer.Option("--config", help="MM2 properties with the flows; cluster addresses are filled in")
        ] = SAMPLE_CONFIG,
        rate: Annotated[
            float, typer.Option("--rate", min=0.1, max=1000, help="records per second into each sample topic")
        ] = 5,
        keep_logs: Annotated[bool, typer.Option("--keep-logs", help="keep logs and config after a clean stop")] = False,
    ) -> None:
        """Two local Kafka clusters, every Strait service, sample traffic and a live status view; Ctrl-C stops all."""
        live = not no_live and Console().is_terminal
        raise typer.Exit(Demo(config, duration_s, live, rate, keep_logs).run())
