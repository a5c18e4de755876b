"""The cluster probe asks about a topic the cluster has: a client that asked once for a topic the cluster lacks keeps
asking for it (twice a second, measured) for as long as it lives."""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from shared.kafka.probe import ClusterProbe


class _Cluster:
    """The topics a cluster has, and the admin clients made for it (each remembers what it was asked)."""

    def __init__(self, *topics: str) -> None:
        self.topics = set(topics)
        self.silent = False
        self.admins: list[_Admin] = []

    def admin(self, _props: Mapping[str, str]) -> Any:
        self.admins.append(_Admin(self))
        return self.admins[-1]


class _Admin:
    def __init__(self, cluster: _Cluster) -> None:
        self.cluster = cluster
        self.asked: list[str | None] = []

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any:
        self.asked.append(topic)
        if self.cluster.silent:
            raise KafkaException(KafkaError(KafkaError._TRANSPORT))
        unknown = SimpleNamespace(error=KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART))
        found = {name: SimpleNamespace(error=None) for name in self.cluster.topics if topic in (None, name)}
        return SimpleNamespace(topics=found if topic is None or found else {topic: unknown})


def test_a_probe_lists_the_topics_once_then_asks_about_one_the_cluster_has() -> None:
    cluster = _Cluster("orders", "__consumer_offsets")
    probe = ClusterProbe({}, timeout_s=1, new_admin=cluster.admin)
    assert [probe.ask() for _ in range(3)] == [None, None, None]
    assert [admin.asked for admin in cluster.admins] == [[None, "__consumer_offsets", "__consumer_offsets"]]


def test_a_topic_deleted_since_retires_the_client_that_asked_for_it() -> None:
    cluster = _Cluster("orders")
    probe = ClusterProbe({}, timeout_s=1, new_admin=cluster.admin)
    assert probe.ask() is None
    cluster.topics = {"payments"}
    assert probe.ask() is None, "an answer, even 'unknown topic', means the cluster is there"
    assert probe.ask() is None
    assert [admin.asked for admin in cluster.admins] == [[None, "orders"], [None]]
    assert probe.ask() is None
    assert cluster.admins[-1].asked == [None, "payments"]


def test_a_cluster_without_topics_is_asked_for_its_list_each_time() -> None:
    cluster = _Cluster()
    probe = ClusterProbe({}, timeout_s=1, new_admin=cluster.admin)
    assert [probe.ask(), probe.ask()] == [None, None]
    assert [admin.asked for admin in cluster.admins] == [[None, None]]


def test_silence_is_reported_and_the_next_probe_starts_over_with_a_new_client() -> None:
    cluster = _Cluster("orders")
    probe = ClusterProbe({}, timeout_s=1, new_admin=cluster.admin)
    assert probe.ask() is None
    cluster.silent = True
    assert probe.ask() is not None
    cluster.silent = False
    assert probe.ask() is None
    assert [admin.asked for admin in cluster.admins] == [[None, "orders"], [None]]
