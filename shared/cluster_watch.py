"""Is each cluster a service needs answering right now? A cheap periodic probe whose verdict the status reports.

A service's own work can block for a long time on a cluster that stopped answering (requests wait for
`admin.timeout.ms`, 60 s by default), so its status cannot wait for that work to fail. A metadata request
for one (absent) topic with a short deadline tells within seconds; an answer of any kind (even a refusal)
means the cluster is reachable, only silence or a broken connection means it is not. (Not DescribeCluster:
librdkafka 2.x aborts the process when an admin request's answer arrives after its deadline passed.)
Probes are blocking: run `probe` in a thread (`probe_async` does).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping

import structlog
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from shared.config import FlowConfig
from shared.kafka.factories import confluent_admin

PROBE_TIMEOUT_S = 8.0
# Asked about, never created: the probe's client does not allow auto-creation, and `.internal` is never mirrored.
PROBE_TOPIC = "strait.probe.internal"
_log = structlog.get_logger(__name__)
_TIMEOUTS = frozenset({KafkaError._TIMED_OUT, KafkaError._MSG_TIMED_OUT, KafkaError.REQUEST_TIMED_OUT})
# What librdkafka reports when nothing (or no broker) answered in time.
_SILENCE = frozenset(
    {
        KafkaError._TIMED_OUT,
        KafkaError._TRANSPORT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError._RESOLVE,
        KafkaError._MSG_TIMED_OUT,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError.NETWORK_EXCEPTION,
    }
)


class ClusterWatch:
    """Probes the clusters `alias -> admin props` and remembers which of them did not answer, and since when."""

    def __init__(self, clusters: Mapping[str, Mapping[str, str]], *, timeout_s: float = PROBE_TIMEOUT_S) -> None:
        self._props = {alias: dict(props) for alias, props in clusters.items()}
        self._timeout_s = timeout_s
        self._admins: dict[str, AdminClient] = {}
        self._down: dict[str, tuple[str, float]] = {}  # alias -> (why, since epoch s)

    @classmethod
    def for_flows(cls, flows: Iterable[FlowConfig], *, timeout_s: float = PROBE_TIMEOUT_S) -> ClusterWatch:
        """A watch over the source and target of every flow (FlowConfig), each cluster once."""
        clusters: dict[str, Mapping[str, str]] = {}
        for flow in flows:
            clusters.setdefault(flow.source, flow.source_admin_props())
            clusters.setdefault(flow.target, flow.target_admin_props())
        return cls(clusters, timeout_s=timeout_s)

    @property
    def aliases(self) -> list[str]:
        """The watched clusters."""
        return list(self._props)

    def probe(self) -> None:
        """Ask every watched cluster, one after the other, each within the probe's deadline."""
        for alias in self._props:
            try:
                self._admin(alias).list_topics(PROBE_TOPIC, timeout=self._timeout_s)
            except Exception as exc:  # KafkaException (no answer in time, broken connection) or a bad setting
                # A client whose broker went silent can stay without a usable connection long after the broker
                # is back (seen: "Broker transport failure" for minutes): the next probe uses a new one.
                self._admins.pop(alias, None)
                self._verdict(alias, exc)
            else:
                self._verdict(alias, None)

    def _admin(self, alias: str) -> AdminClient:
        admin = self._admins.get(alias)
        if admin is None:
            admin = self._admins[alias] = confluent_admin(self._props[alias], **{"allow.auto.create.topics": False})
        return admin

    async def probe_async(self) -> None:
        """`probe` in a worker thread."""
        await asyncio.to_thread(self.probe)

    def _verdict(self, alias: str, exc: BaseException | None) -> None:
        reason = None if exc is None else _silence(exc, self._timeout_s)
        was = self._down.get(alias)
        if reason is None:
            if was is not None:
                del self._down[alias]
                _log.info("cluster_reachable_again", cluster=alias, down_s=round(time.time() - was[1], 1))
            return
        message = f"cluster {alias} unreachable: {reason}"
        if was is None:
            _log.warning("cluster_unreachable", cluster=alias, error=message)
        self._down[alias] = (message, was[1] if was else time.time())

    def errors(self, aliases: Iterable[str] | None = None) -> list[str]:
        """Why each unreachable cluster of `aliases` (default: all) is unreachable: `cluster A unreachable: ...`."""
        wanted = self.aliases if aliases is None else list(aliases)
        found = [self._down.get(alias) for alias in wanted]  # probes run in another thread: no check-then-get
        return [entry[0] for entry in found if entry is not None]

    def unreachable(self) -> dict[str, float]:
        """alias -> since when (epoch seconds) it has not answered."""
        return {alias: since for alias, (_, since) in dict(self._down).items()}


def _silence(exc: BaseException, timeout_s: float) -> str | None:
    """Why the probe got no answer, or None if the cluster did answer (even with an error)."""
    if isinstance(exc, TimeoutError):
        return f"no answer to a metadata request within {timeout_s:g}s"
    error = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    if isinstance(error, KafkaError):
        if error.code() not in _SILENCE:
            return None
        if error.code() in _TIMEOUTS:
            return f"no answer to a metadata request within {timeout_s:g}s ({error.name()}: {error.str()})"
        return f"{error.name()}: {error.str()}"
    return f"{type(exc).__name__}: {exc}"
