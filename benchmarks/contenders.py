"""Strait and MirrorMaker 2 as measured processes, both reading the same MM2 properties file.

The file is written once per run and given unchanged to both tools, so topics, task count, producer
batching and compression are the same by construction: `tasks.max` is MM2's task count and Strait's
Spark task count, and the target cluster's `producer.*` keys reach MM2's worker producer (dedicated mode
passes `<target>.producer.*` to the worker) and Strait's producer alike. Both run at-least-once
(MM2 dedicated mode has no exactly-once source connector by default) and only copy records and create
topics: heartbeats, checkpoints, group offset sync and ACL sync are off for both.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import psutil

from benchmarks.usage import UsageSampler
from shared.localkafka.cluster import ClusterAddress
from shared.localkafka.mirror_maker import MirrorMakerProcess, write_properties
from shared.localkafka.ports import free_port

STRAIT, MM2 = "Strait", "MM2"
SPARK_JVM, WORKERS = "Spark JVM", "Spark Python workers"  # process roles below data-mirror
TOOLS = (STRAIT, MM2)
_PR_SET_PDEATHSIG = 1
# What Connect logs when a task fails for good ("... Task is being killed and will not recover until manually
# restarted"); a line is never split across two reads of a log written line by line, but a read may end inside one,
# hence the shorter marker
TASK_FAILED = b"will not recover until manually"
MM2_HEAP_MB = 1024  # every record passes through MM2's heap (Strait's driver JVM, 512 MiB, never holds one)

# Identical for both tools: the target producer (batching and delivery guarantees). Compression stays at
# both clients' default, none (setting `compression.type=none` explicitly trips Strait's aiokafka-based
# control publisher, which expects no value for "none").
PRODUCER = {
    "acks": "all",
    "enable.idempotence": "true",  # Strait's producer is idempotent; MM2's worker default is off, so say it
    "max.in.flight.requests.per.connection": "5",  # Connect's default is 1: give MM2 the same pipelining
    "batch.size": "262144",
    "linger.ms": "5",
}
# Only record copying and topic creation, for both.
FEATURES_OFF = {
    "emit.heartbeats.enabled": "false",
    "emit.checkpoints.enabled": "false",
    "sync.group.offsets.enabled": "false",
    "sync.topic.acls.enabled": "false",
}
SINGLE_BROKER = {
    "replication.factor": "1",
    "checkpoints.topic.replication.factor": "1",
    "heartbeats.topic.replication.factor": "1",
    "offset-syncs.topic.replication.factor": "1",
    "offset.storage.replication.factor": "1",
    "config.storage.replication.factor": "1",
    "status.storage.replication.factor": "1",
}


@dataclass(frozen=True)
class MirrorSetup:
    """One run's flow: fresh aliases, the topic regex, task count and (optionally) the topic refresh interval."""

    source_alias: str
    target_alias: str
    topics: str
    tasks: int
    refresh_topics_s: int | None = None  # None: each tool's own default
    source_consumer: tuple[tuple[str, str], ...] = ()  # `<source>.consumer.*` settings (a distant source's tuning)
    flow_settings: tuple[tuple[str, str], ...] = ()  # `<source>-><target>.*` settings (e.g. transforms)
    exactly_once: bool = False  # both tools deliver exactly once (see `mirror_properties`)

    @property
    def flow(self) -> str:
        """`src->tgt`."""
        return f"{self.source_alias}->{self.target_alias}"


def mirror_properties(setup: MirrorSetup, source_servers: str, target_servers: str) -> dict[str, str]:
    """The MM2 properties both tools read for this run."""
    src, tgt = setup.source_alias, setup.target_alias
    props = {
        "clusters": f"{src}, {tgt}",
        f"{src}.bootstrap.servers": source_servers,
        f"{tgt}.bootstrap.servers": target_servers,
        f"{setup.flow}.enabled": "true",
        f"{tgt}->{src}.enabled": "false",
        f"{setup.flow}.topics": setup.topics,
        "tasks.max": str(setup.tasks),
        **{f"{tgt}.producer.{key}": value for key, value in PRODUCER.items()},
        **FEATURES_OFF,
        **SINGLE_BROKER,
    }
    if setup.refresh_topics_s is not None:
        props["refresh.topics.interval.seconds"] = str(setup.refresh_topics_s)
    props |= {f"{src}.consumer.{key}": value for key, value in setup.source_consumer}
    props |= {f"{setup.flow}.{key}": value for key, value in setup.flow_settings}
    if setup.exactly_once:  # as MM2's README asks: the target's worker switch, and the internal REST server that
        # MM2's dedicated mode needs for it (on a free loopback port); Strait reads the same switch
        props[f"{tgt}.exactly.once.source.support"] = "enabled"
        props["dedicated.mode.enable.internal.rest"] = "true"
        props["listeners"] = f"http://127.0.0.1:{free_port()}"
    return props


def settings_text(setup: MirrorSetup) -> str:
    """The properties file with placeholder addresses, for the report."""
    props = mirror_properties(setup, "<source broker>", "<target broker>")
    return "\n".join(f"{key}={value}" for key, value in props.items())


class Mirror(Protocol):
    """A running replicator."""

    tool: str

    def start(self) -> None:
        """Start every process of the tool."""

    def measure(self, scenario: str) -> UsageSampler:
        """A started usage sampler over every process of the tool."""

    def alive(self) -> bool:
        """True while every process runs."""

    def log_tail(self) -> str:
        """The end of the tool's logs, for error messages."""

    def stop(self) -> None:
        """Stop every process (SIGTERM, then SIGKILL for what is left)."""


class _Service:
    """One Strait console command (`strait-data-mirror --config FILE`) as an operator runs it."""

    def __init__(self, command: str, config: Path, log_path: Path, env: Mapping[str, str]) -> None:
        binary = Path(sys.executable).with_name(command)
        self.argv = [str(binary), "--config", str(config), "--metrics-port", "0"]
        self.log_path = log_path
        self.env = {**os.environ, **env}
        self.popen: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start the command in its own session, logging to its file."""
        with open(self.log_path, "ab") as log:
            self.popen = subprocess.Popen(
                self.argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.env,
                start_new_session=True,
                preexec_fn=_term_with_parent,
            )

    @property
    def pid(self) -> int:
        """The process id (after start)."""
        assert self.popen is not None, "not started"
        return self.popen.pid

    def alive(self) -> bool:
        """True while the process runs."""
        return self.popen is not None and self.popen.poll() is None

    def stop(self, timeout_s: float = 60) -> None:
        """SIGTERM (data-mirror hands its tasks over: they commit), then SIGKILL the tree."""
        if self.popen is None:
            return
        tree = _tree(self.popen.pid)
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.popen.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout=timeout_s)
        for process in [*tree, *_tree(self.popen.pid)]:
            with contextlib.suppress(psutil.Error):
                process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=30)


def _term_with_parent() -> None:
    """Runs in the child before exec: SIGTERM it (a clean stop) if the benchmark dies without stopping it."""
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _tree(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def strait_role(root: str, process: psutil.Process, is_root: bool) -> str:
    """Name a Strait process: the service itself, Spark's JVM, a PySpark worker, or spark-submit's shell."""
    if is_root:
        return f"{root} (Python)"
    cmdline = process.cmdline()
    joined = " ".join(cmdline)
    if "pyspark.daemon" in joined or "pyspark.worker" in joined:
        return WORKERS
    if process.name() == "java" or (cmdline and cmdline[0].endswith("/java")):
        return SPARK_JVM
    return "spark-submit launcher" if root == "data-mirror" else f"{root} children"


class StraitMirror:
    """topic-sync (creates remote topics) and data-mirror (copies records): what MM2's source connector does."""

    tool = STRAIT

    def __init__(
        self,
        config: Path,
        run_dir: Path,
        tasks: int,
        commit_interval_ms: int | None = None,
        spark_master: str | None = None,
    ) -> None:
        env = {"STRAIT_TASKS": str(tasks), "STRAIT_SPARK_MASTER": spark_master or f"local[{tasks}]"}
        if commit_interval_ms is not None:
            env["STRAIT_COMMIT_INTERVAL_MS"] = str(commit_interval_ms)
        self.env = env
        self.services = {
            "topic-sync": _Service("strait-topic-sync", config, run_dir / "topic-sync.log", env),
            "data-mirror": _Service("strait-data-mirror", config, run_dir / "data-mirror.log", env),
        }

    def start(self) -> None:
        """Start topic-sync and data-mirror."""
        for service in self.services.values():
            service.start()

    @property
    def data_mirror_pid(self) -> int:
        """The data-mirror driver's pid (Spark's JVM and workers are below it)."""
        return self.services["data-mirror"].pid

    def measure(self, scenario: str) -> UsageSampler:
        """Sample both services and everything below them."""
        roots = {name: service.pid for name, service in self.services.items()}
        return UsageSampler(self.tool, scenario, roots, strait_role).start()

    def alive(self) -> bool:
        """True while both services run."""
        return all(service.alive() for service in self.services.values())

    def log_tail(self) -> str:
        """The end of both services' logs."""
        return "\n".join(f"--- {name}\n{_tail(s.log_path)}" for name, s in self.services.items())

    def stop(self) -> None:
        """Stop data-mirror, then topic-sync."""
        for service in reversed(self.services.values()):
            service.stop()


class Mm2Mirror:
    """MirrorMaker 2 in dedicated mode (`connect-mirror-maker.sh` without the script), one JVM."""

    tool = MM2

    def __init__(self, config: Path, run_dir: Path, target_alias: str) -> None:
        self.log_path = run_dir / "mirror-maker.log"
        self.process = MirrorMakerProcess(config, log_path=self.log_path, clusters=[target_alias], heap_mb=MM2_HEAP_MB)
        self._log_read = 0
        self._task_failed = False

    def start(self) -> None:
        """Start the MM2 JVM."""
        self.process.start()

    def measure(self, scenario: str) -> UsageSampler:
        """Sample the MM2 JVM."""
        pid = self.process.pid
        assert pid is not None, "not started"
        return UsageSampler(self.tool, scenario, {"MM2": pid}, lambda _r, _p, _root: "MM2 JVM").start()

    def alive(self) -> bool:
        """True while the JVM runs and none of its tasks failed for good (Connect leaves a failed task dead until it
        is restarted by hand: MM2 then copies nothing more of its partitions, while the JVM runs on)."""
        return self.process.is_running() and not self._a_task_failed()

    def _a_task_failed(self) -> bool:
        if not self._task_failed:
            try:
                with open(self.log_path, "rb") as log:
                    log.seek(self._log_read)
                    written = log.read()
            except OSError:
                return False
            self._log_read += len(written)
            self._task_failed = TASK_FAILED in written
        return self._task_failed

    def log_tail(self) -> str:
        """The end of MM2's log."""
        return self.process.log_tail(3000)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 30 s."""
        self.process.stop(timeout_s=30)


def _tail(path: Path, limit: int = 2000) -> str:
    try:
        return path.read_text(errors="replace")[-limit:]
    except OSError:
        return ""


def open_mirror(tool: str, setup: MirrorSetup, source: ClusterAddress, target: ClusterAddress, run_dir: Path) -> Mirror:
    """Write the run's properties file and build (not start) the tool's processes."""
    servers = [address.client_properties()["bootstrap.servers"] for address in (source, target)]
    props = mirror_properties(setup, *servers)
    config = write_properties(run_dir / "mm2.properties", props)
    if tool == STRAIT:
        return StraitMirror(config, run_dir, setup.tasks)
    return Mm2Mirror(config, run_dir, setup.target_alias)
