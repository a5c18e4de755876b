"""Random faults from a seeded generator: broker kill -9 or clean restart, broker pause, service kill -9, and (when
the services reach the brokers through the fault proxy) connection resets, latency spikes and black holes."""

from __future__ import annotations

import random
import signal
import time

from shared.localkafka import HarnessError, KafkaCluster
from tests.soak.events import EventLog
from tests.soak.fleet import Fleet

# kind -> weight: service kills and broker restarts most often, a frozen broker now and then.
KINDS = {"broker-kill": 3, "broker-restart": 2, "broker-pause": 1, "service-kill": 4}
# Between the services and one cluster, as a WAN link misbehaves: each on for a while, then healed.
NETWORK_KINDS = {"net-resets": 2, "net-latency": 2, "net-black-hole": 1}
PAUSE_S = (5.0, 15.0)
RESETS_S = (10.0, 30.0)  # connections reset every RESET_EVERY_S for this long
RESET_EVERY_S = 2.0
LATENCY_MS = (150, 500)  # round trip added
LATENCY_S = (10.0, 40.0)
DARK_S = (15.0, 60.0)  # nothing answers: past the clients' 30 s request timeout at the long end
# Twice per soak (source, then target) a black hole past the producers' 120 s delivery timeout and a transaction's
# 60 s timeout: the copy task's sends fail, it restarts from its progress, and nothing may be lost or doubled.
LONG_DARK_S = 150.0
LONG_DARK_AT = (0.25, 0.55)  # fractions of the traffic time after which the long black holes come
READY_TIMEOUT_S = 180


class FaultInjector:
    """Injects one random fault at a time; must run on the thread that started the clusters (the main thread)."""

    def __init__(
        self,
        rng: random.Random,
        clusters: list[KafkaCluster],
        fleet: Fleet,
        events: EventLog,
        *,
        network: bool = False,
    ) -> None:
        self._rng = rng
        self._clusters = clusters
        self._fleet = fleet
        self._events = events
        self._kinds = {**KINDS, **NETWORK_KINDS} if network else dict(KINDS)

    def inject(self) -> None:
        """Pick a fault kind and a victim, do it, and log it with how long it took."""
        kind = self._rng.choices(list(self._kinds), weights=list(self._kinds.values()))[0]
        at_s = self._events.elapsed_s()
        started = time.monotonic()
        if kind in NETWORK_KINDS:
            detail = self._network(kind, self._rng.choice(self._clusters))
        elif kind == "service-kill":
            name = self._rng.choice(self._fleet.names())
            self._fleet.kill_and_restart(name)
            detail = f"kill -9 {name}, new instance started"
        else:
            cluster = self._rng.choice(self._clusters)
            index = self._rng.randrange(len(cluster.nodes))
            broker = f"broker {cluster.name}/{cluster.nodes[index].node_id}"
            if kind == "broker-pause":
                pause_s = round(self._rng.uniform(*PAUSE_S), 1)
                detail = f"SIGSTOP {broker} for {pause_s}s"
                self._pause(cluster, index, pause_s)
            else:
                hard = kind == "broker-kill"
                detail = f"{'kill -9' if hard else 'SIGTERM'} {broker} and restart"
                self._restart(cluster, index, hard)
        self._events.record(kind, detail, time.monotonic() - started, at_s=at_s)

    def inject_long_black_hole(self, cluster: KafkaCluster) -> None:
        """The scheduled long black hole to `cluster`, logged like any other fault."""
        at_s = self._events.elapsed_s()
        started = time.monotonic()
        detail = self._network("net-black-hole", cluster, dark_s=LONG_DARK_S)
        self._events.record("net-black-hole-long", detail, time.monotonic() - started, at_s=at_s)

    def _network(self, kind: str, cluster: KafkaCluster, *, dark_s: float | None = None) -> str:
        """One network fault between the services and `cluster`, on for a random while (a black hole: `dark_s` if
        given), then healed."""
        path = cluster.network
        if kind == "net-resets":
            seconds = round(self._rng.uniform(*RESETS_S), 1)
            with path.resets_every(RESET_EVERY_S):
                time.sleep(seconds)
            return f"connections to {cluster.name} reset every {RESET_EVERY_S:g}s for {seconds}s"
        if kind == "net-latency":
            round_trip_ms = self._rng.randrange(*LATENCY_MS)
            seconds = round(self._rng.uniform(*LATENCY_S), 1)
            path.latency(round_trip_ms)
            detail = f"{round_trip_ms} ms added to every round trip to {cluster.name} for {seconds}s"
        else:
            seconds = dark_s if dark_s is not None else round(self._rng.uniform(*DARK_S), 1)
            path.black_hole()
            detail = f"black hole to {cluster.name} (nothing answers, nothing closes) for {seconds}s"
        try:
            time.sleep(seconds)
        finally:
            path.heal()
        return detail

    def _restart(self, cluster: KafkaCluster, index: int, hard: bool) -> None:
        try:
            cluster.restart_node(index, hard=hard, timeout_s=READY_TIMEOUT_S)
        except HarnessError as exc:
            self._events.record("broker-not-ready", str(exc))

    def _pause(self, cluster: KafkaCluster, index: int, pause_s: float) -> None:
        process = cluster.nodes[index].process
        process.send_signal(signal.SIGSTOP)
        try:
            time.sleep(pause_s)
        finally:
            process.send_signal(signal.SIGCONT)
        try:
            cluster.wait_ready(READY_TIMEOUT_S)
        except HarnessError as exc:
            self._events.record("broker-not-ready", str(exc))


def check_brokers(clusters: list[KafkaCluster], events: EventLog) -> None:
    """Restart (and record) any broker that exited without being asked to."""
    for cluster in clusters:
        for node in cluster.nodes:
            if not node.process.is_running():
                events.record("broker-exit", f"broker {cluster.name}/{node.node_id} exited on its own; restarting")
                node.process.start()
                try:
                    cluster.wait_ready(READY_TIMEOUT_S)
                except HarnessError as exc:
                    events.record("broker-not-ready", str(exc))
