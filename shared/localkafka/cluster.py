"""A KRaft cluster of N combined broker+controller processes on free 127.0.0.1 ports."""

from __future__ import annotations

import base64
import contextlib
import shutil
import socket
import tempfile
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from confluent_kafka.admin import AdminClient

from shared.kafka.client_props import to_librdkafka
from shared.localkafka.fault_proxy import FaultProxy, Link, NetworkPath
from shared.localkafka.jars import HarnessError
from shared.localkafka.ports import free_port
from shared.localkafka.processes import JvmProcess
from shared.localkafka.tls import TlsFiles, make_tls_files

SCRAM_MECHANISM = "SCRAM-SHA-256"
# Kafka's defaults want three replicas of its internal topics (two in sync): a smaller cluster has to say less,
# or it cannot hold a consumer group's offsets or a transaction's state at all. Nothing else is set.
_FEWER_THAN_THREE = {
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
}


@dataclass(frozen=True)
class SaslUser:
    """A SCRAM user created when the storage is formatted."""

    name: str
    password: str


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@dataclass
class BrokerNode:
    """One combined broker+controller node of a cluster."""

    node_id: int
    port: int
    controller_port: int
    data_dir: Path
    config_path: Path
    process: JvmProcess
    proxied_port: int = 0  # with a fault proxy: the broker's listener behind it
    proxy_port: int = 0  # with a fault proxy: the proxy's port that listener advertises


class ClusterAddress(Protocol):
    """How clients reach a cluster: its own listener, or the path through a fault proxy (`via_proxy`)."""

    def client_properties(self, user: SaslUser | None = None) -> dict[str, str]: ...


class ProxiedAddress:
    """A cluster as a client behind the fault proxy reaches it: bootstrap and every broker through the proxy."""

    def __init__(self, cluster: KafkaCluster) -> None:
        self.cluster = cluster

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{node.proxy_port}" for node in self.cluster.nodes)

    def client_properties(self, user: SaslUser | None = None) -> dict[str, str]:
        return {**self.cluster.client_properties(user), "bootstrap.servers": self.bootstrap_servers}


class KafkaCluster:
    """Formats, starts and stops a real Kafka cluster in KRaft mode.

    With `sasl=True` clients must use SASL_PLAINTEXT/SCRAM-SHA-256, StandardAuthorizer is on and the
    `admin` user (always created) is a super user; other `users` are created at format time.
    With `tls=True` the client listener speaks TLS (SSL, or SASL_SSL with `sasl`) with a certificate from a
    CA made for this cluster (`tls_files.ca`); the controller listener stays PLAINTEXT on loopback.
    """

    def __init__(
        self,
        name: str,
        brokers: int = 1,
        *,
        workdir: Path | None = None,
        sasl: bool = False,
        tls: bool = False,
        users: tuple[SaslUser, ...] = (),
        heap_mb: int = 384,
        broker_overrides: dict[str, str] | None = None,
        proxy: FaultProxy | None = None,
        broker_defaults: bool = False,
        jvm_options: tuple[str, ...] | list[str] = (),
    ) -> None:
        if brokers < 1:
            raise HarnessError(f"a cluster needs at least one broker, got {brokers}")
        self.name = name
        self.sasl = sasl
        self.admin_user = SaslUser("admin", f"admin-{uuid.uuid4().hex[:12]}")
        self.users = (self.admin_user, *users) if sasl else ()
        self.heap_mb = heap_mb
        self.broker_overrides = dict(broker_overrides or {})
        self._own_workdir = workdir is None
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix=f"strait-kafka-{name}-"))
        self.tls_files: TlsFiles | None = make_tls_files(self.workdir / "tls") if tls else None
        self.cluster_id = _cluster_id()
        self.proxy = proxy
        self.broker_defaults = broker_defaults  # Apache Kafka's own settings, as many users run them
        self.jvm_options = list(jvm_options)  # for every broker's JVM
        self._links: list[Link] = []
        self.nodes = [self._plan_node(node_id) for node_id in range(1, brokers + 1)]

    def _plan_node(self, node_id: int) -> BrokerNode:
        node_dir = self.workdir / f"node-{node_id}"
        config_path = node_dir / "server.properties"
        process = JvmProcess(
            "kafka.Kafka",
            [str(config_path)],
            log_path=node_dir / "broker.log",
            heap_mb=self.heap_mb,
            jvm_options=self.jvm_options,
        )
        node = BrokerNode(node_id, free_port(), free_port(), node_dir / "data", config_path, process)
        if self.proxy is not None:
            node.proxied_port, node.proxy_port = free_port(), free_port()
        return node

    def via_proxy(self) -> ProxiedAddress:
        """The cluster as clients behind the fault proxy reach it (give this to the services under test)."""
        if self.proxy is None:
            raise HarnessError(f"cluster {self.name} was started without a fault proxy")
        return ProxiedAddress(self)

    @property
    def network(self) -> NetworkPath:
        """The network between proxied clients and this cluster's brokers: put faults on it, then `heal`."""
        if not self._links:
            raise HarnessError(f"cluster {self.name} has no fault proxy (or is not started)")
        return NetworkPath(self._links)

    @property
    def bootstrap_servers(self) -> str:
        """Comma-separated host:port list of the client listener."""
        return ",".join(f"127.0.0.1:{node.port}" for node in self.nodes)

    def client_properties(self, user: SaslUser | None = None) -> dict[str, str]:
        """Java-client-style properties to reach this cluster (as an MM2 config would hold them)."""
        props = {"bootstrap.servers": self.bootstrap_servers}
        if self.tls_files is not None:
            props |= {
                "security.protocol": self._protocol(),
                "ssl.truststore.type": "PEM",
                "ssl.truststore.location": str(self.tls_files.ca),
            }
        if self.sasl:
            who = user or self.admin_user
            props |= {
                "security.protocol": self._protocol(),
                "sasl.mechanism": SCRAM_MECHANISM,
                "sasl.jaas.config": (
                    "org.apache.kafka.common.security.scram.ScramLoginModule required "
                    f'username="{who.name}" password="{who.password}";'
                ),
            }
        return props

    def _protocol(self) -> str:
        """The client listener's security protocol."""
        transport = "SSL" if self.tls_files is not None else "PLAINTEXT"
        return f"SASL_{transport}" if self.sasl else transport

    def _server_properties(self, node: BrokerNode) -> str:
        voters = ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in self.nodes)
        replication = str(min(3, len(self.nodes)))
        protocol = self._protocol()
        listeners = f"CLIENT://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:{node.controller_port}"
        advertised = f"CLIENT://127.0.0.1:{node.port}"
        protocols = f"CLIENT:{protocol},CONTROLLER:PLAINTEXT"
        if node.proxy_port:  # a second client listener, advertised at the proxy's port: clients stay behind it
            listeners += f",PROXIED://127.0.0.1:{node.proxied_port}"
            advertised += f",PROXIED://127.0.0.1:{node.proxy_port}"
            protocols += f",PROXIED:{protocol}"
        props = {
            "process.roles": "broker,controller",
            "node.id": str(node.node_id),
            "controller.quorum.voters": voters,
            "listeners": listeners,
            "advertised.listeners": advertised,
            "listener.security.protocol.map": protocols,
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "CLIENT",
            "log.dirs": str(node.data_dir),
        }
        if self.broker_defaults:
            props |= _FEWER_THAN_THREE if len(self.nodes) < 3 else {}
        else:
            props |= self._tuned(replication, len(self.nodes))
        if self.sasl:
            jaas = (
                "org.apache.kafka.common.security.scram.ScramLoginModule required "
                f'username="{self.admin_user.name}" password="{self.admin_user.password}";'
            )
            props |= {
                "sasl.enabled.mechanisms": SCRAM_MECHANISM,
                "sasl.mechanism.inter.broker.protocol": SCRAM_MECHANISM,
                f"listener.name.client.{SCRAM_MECHANISM.lower()}.sasl.jaas.config": jaas,
                "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                # Brokers reach the controllers over the loopback-only PLAINTEXT controller listener.
                "super.users": f"User:{self.admin_user.name};User:ANONYMOUS",
                "allow.everyone.if.no.acl.found": "false",
            }
            if node.proxy_port:
                props[f"listener.name.proxied.{SCRAM_MECHANISM.lower()}.sasl.jaas.config"] = jaas
        if self.tls_files is not None:
            # Brokers talk to each other over the client listener too, so they also trust the test CA.
            props |= {
                "ssl.keystore.type": "PEM",
                "ssl.keystore.location": str(self.tls_files.server),
                "ssl.truststore.type": "PEM",
                "ssl.truststore.location": str(self.tls_files.ca),
            }
        props |= self.broker_overrides
        return "".join(f"{key}={value}\n" for key, value in props.items())

    @staticmethod
    def _tuned(replication: str, nodes: int) -> dict[str, str]:
        """The suite's broker settings: quick to start and to elect, small, and no topic auto-creation.

        Idle brokers cost CPU the suite needs elsewhere (one-node clusters stay up for a whole run): the controller
        writes a no-op record to the metadata log every 5 s instead of every 0.5 s, and a one-node cluster, where no
        other broker takes over, heartbeats at Kafka's default 2 s. A one-node broker idled at 0.029 cores with the
        fast beats, 0.015 with these. Clusters of several brokers keep 0.5 s beats: fault tests wait for a killed
        broker to be fenced."""
        beats = {"broker.session.timeout.ms": "6000", "broker.heartbeat.interval.ms": "500"} if nodes > 1 else {}
        return beats | {
            "metadata.max.idle.interval.ms": "5000",
            "auto.create.topics.enable": "false",
            "num.partitions": "1",
            "default.replication.factor": "1",
            "offsets.topic.replication.factor": replication,
            "offsets.topic.num.partitions": "10",
            "transaction.state.log.replication.factor": replication,
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "5",
            "min.insync.replicas": "1",
            "group.initial.rebalance.delay.ms": "0",
            "num.network.threads": "2",
            "num.io.threads": "4",
            "num.recovery.threads.per.data.dir": "1",
            "log.cleaner.threads": "1",
            "log.cleaner.dedupe.buffer.size": str(8 * 1024 * 1024),
            "controller.quorum.election.timeout.ms": "1000",
            "controller.quorum.fetch.timeout.ms": "2000",
            "share.coordinator.state.topic.replication.factor": replication,
            "share.coordinator.state.topic.min.isr": "1",
        }

    def _format(self, node: BrokerNode) -> None:
        node.config_path.parent.mkdir(parents=True, exist_ok=True)
        node.config_path.write_text(self._server_properties(node))
        args = ["format", "-t", self.cluster_id, "-c", str(node.config_path), "--ignore-formatted"]
        for user in self.users:
            args += ["--add-scram", f"{SCRAM_MECHANISM}=[name={user.name},password={user.password}]"]
        tool = JvmProcess("kafka.tools.StorageTool", args, log_path=node.config_path.parent / "format.log", heap_mb=128)
        code = tool.run_to_completion(timeout_s=120)
        if code != 0:  # seen once under load: one more try before giving up, with the tool's output kept
            code = tool.run_to_completion(timeout_s=120)
        if code != 0:
            raise HarnessError(
                f"formatting KRaft storage of {self.name}/{node.node_id} failed (exit {code}): {tool.log_tail()}"
            )

    def launch(self) -> None:
        """Format storage (first time only) and start every node without waiting for readiness.

        Call it from a thread that outlives the cluster (normally the main thread): the kernel kills
        the brokers when the thread that started them ends, which is what keeps crashes from leaking JVMs.
        """
        fresh = [node for node in self.nodes if not (node.data_dir / "meta.properties").exists()]
        with ThreadPoolExecutor(max_workers=max(1, len(fresh))) as pool:
            list(pool.map(self._format, fresh))
        if self.proxy is not None and not self._links:
            self._links = [
                self.proxy.link(f"{self.name}-{node.node_id}", node.proxy_port, node.proxied_port)
                for node in self.nodes
            ]
        for node in self.nodes:
            node.process.start()

    def start(self, timeout_s: float = 90) -> KafkaCluster:
        """`launch`, then wait until every node serves clients."""
        self.launch()
        self.wait_ready(timeout_s)
        return self

    def wait_ready(self, timeout_s: float = 90) -> None:
        """Block until every node's client port accepts connections and the cluster sees all brokers."""
        deadline = time.monotonic() + timeout_s
        for node in self.nodes:
            while not _port_open(node.port):
                if not node.process.is_running():
                    raise HarnessError(f"broker {self.name}/{node.node_id} exited: {node.process.log_tail()}")
                if time.monotonic() > deadline:
                    raise HarnessError(f"broker {self.name}/{node.node_id} not listening after {timeout_s}s")
                time.sleep(0.2)
        admin = AdminClient(to_librdkafka(self.client_properties()).settings)
        while True:
            try:
                metadata = admin.list_topics(timeout=5)
                if len(metadata.brokers) == len(self.nodes):
                    return
            except Exception as exc:  # the client raises KafkaException subclasses while the cluster forms
                last_error: Exception | None = exc
            else:
                last_error = None
            if time.monotonic() > deadline:
                raise HarnessError(f"cluster {self.name} not ready after {timeout_s}s: {last_error}")
            time.sleep(0.3)

    def restart_node(self, index: int, *, hard: bool = False, timeout_s: float = 90) -> None:
        """Stop (SIGTERM, or SIGKILL when `hard`) and restart one node, for fault tests."""
        node = self.nodes[index]
        if hard:
            node.process.kill()
        else:
            node.process.stop()
        node.process.start()
        self.wait_ready(timeout_s)

    def stop(self) -> None:
        """Stop every node (in parallel) and remove the cluster's files; safe to call twice."""
        with ThreadPoolExecutor(max_workers=len(self.nodes)) as pool:
            list(pool.map(lambda node: node.process.stop(), self.nodes))
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> KafkaCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def running(*clusters: KafkaCluster) -> Iterator[tuple[KafkaCluster, ...]]:
    """Start `clusters` side by side (every broker launched before any is waited for), stop them all after."""
    try:
        for cluster in clusters:
            cluster.launch()
        for cluster in clusters:
            cluster.wait_ready()
        yield clusters
    finally:
        for cluster in clusters:
            cluster.stop()


def _cluster_id() -> str:
    """A random KRaft cluster id; the storage tool rejects ids that start with '-' (they read as options)."""
    while True:
        candidate = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not candidate.startswith("-"):
            return candidate
