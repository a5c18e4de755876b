"""Does one cluster answer right now? A cheap blocking probe (confluent-kafka) for `shared.cluster_watch`.

A service's own work can block for a long time on a cluster that stopped answering (requests wait for
`admin.timeout.ms`, 60 s by default), so its status cannot wait for that work to fail. A metadata request
for one topic with a short deadline tells within seconds; an answer of any kind (even a refusal) means the
cluster is reachable, only silence or a broken connection means it is not. (Not DescribeCluster: librdkafka
2.x aborts the process when an admin request's answer arrives after its deadline passed.)

The topic asked about is one the cluster has: a client that once asked for a topic the cluster does not have
asks for it again and again for as long as it lives (measured: two metadata requests a second, per service and
cluster, between probes). The first probe of a client lists the topics and keeps one; a cluster with none is
asked for its list each time (a short answer).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient

from shared.kafka.error_classes import kafka_error_of
from shared.kafka.factories import confluent_admin

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


class ClusterProbe:
    """Asks one cluster (admin `props`) for the metadata of a topic it has within `timeout_s`; blocking."""

    def __init__(
        self,
        props: Mapping[str, str],
        *,
        timeout_s: float,
        new_admin: Callable[[Mapping[str, str]], AdminClient] | None = None,
    ) -> None:
        self._props = dict(props)
        self._timeout_s = timeout_s
        self._new_admin = new_admin or _admin
        self._admin: AdminClient | None = None
        self._topic: str | None = None  # one the cluster had when last asked; None: list them

    def ask(self) -> str | None:
        """None if the cluster answered (even with an error), else why it is taken as unreachable."""
        try:
            if self._admin is None:
                self._admin = self._new_admin(self._props)
                self._topic = None  # a new client has asked for nothing yet
            metadata = self._admin.list_topics(self._topic, timeout=self._timeout_s)
        except Exception as exc:  # KafkaException (no answer in time, broken connection) or a bad setting
            # A client whose broker went silent can stay without a usable connection long after the broker
            # is back (seen: "Broker transport failure" for minutes): the next probe uses a new one.
            self._admin = None
            return _silence(exc, self._timeout_s)
        if self._topic is None:
            self._topic = min((name for name, topic in metadata.topics.items() if topic.error is None), default=None)
        elif (found := metadata.topics.get(self._topic)) is None or found.error is not None:
            # Gone since (deleted): this client now asks for it again and again, so the next probe uses a new one.
            self._admin = self._topic = None
        return None


def _silence(exc: BaseException, timeout_s: float) -> str | None:
    """Why the probe got no answer, or None if the cluster did answer (even with an error)."""
    if isinstance(exc, TimeoutError):
        return f"no answer to a metadata request within {timeout_s:g}s"
    error = kafka_error_of(exc)
    if error is not None:
        if error.code() not in _SILENCE:
            return None
        if error.code() in _TIMEOUTS:
            return f"no answer to a metadata request within {timeout_s:g}s ({error.name()}: {error.str()})"
        return f"{error.name()}: {error.str()}"
    return f"{type(exc).__name__}: {exc}"


def _admin(props: Mapping[str, str]) -> AdminClient:
    return confluent_admin(props, **{"allow.auto.create.topics": False})
