"""TopicAdmin's look-ups for data-mirror: partition counts, topic ids and size limits; failures name the cluster."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import ConfigEntry, ConfigResource, ConfigSource
from structlog.testing import capture_logs

from shared.errors import KafkaOperationError
from shared.kafka import topic_admin
from shared.kafka.topic_admin import TopicAdmin
from shared.kafka.topics import ROLLED, ROLLED_COMPACTED


@dataclass
class _Described:
    topic_id: str


@dataclass
class _Partition:
    leader: int = 1
    error: KafkaError | None = None


@dataclass
class _Topic:
    partitions: dict[int, _Partition]
    error: KafkaError | None = None


@dataclass
class _Metadata:
    topics: dict[str, _Topic] = field(default_factory=dict)


def _done(result: object = None, error: int | None = None) -> Future[Any]:
    future: Future[Any] = Future()
    if error is None:
        future.set_result(result)
    else:
        future.set_exception(KafkaException(KafkaError(error)))
    return future


class _Admin:
    """Answers per topic from `answers` (an id, a `max.message.bytes` value, or an error code)."""

    def __init__(self, answers: dict[str, str | int] | None = None, metadata: _Metadata | None = None) -> None:
        self.answers = answers or {}
        self.metadata = metadata or _Metadata()

    def list_topics(self, timeout: float) -> _Metadata:
        return self.metadata

    def describe_topics(self, topics: Any, request_timeout: float) -> dict[str, Future[Any]]:
        return {
            name: _done(_Described(answer)) if isinstance(answer, str) else _done(error=answer)
            for name, answer in self.answers.items()
        }

    def describe_configs(self, resources: list[ConfigResource], request_timeout: float) -> dict[Any, Future[Any]]:
        futures = {}
        for resource in resources:
            answer = self.answers[resource.name]
            entry = ConfigEntry("max.message.bytes", str(answer), source=ConfigSource.DYNAMIC_TOPIC_CONFIG)
            futures[resource] = _done({entry.name: entry}) if isinstance(answer, str) else _done(error=answer)
        return futures


def _admin(monkeypatch: pytest.MonkeyPatch, alias: str, fake: Any) -> TopicAdmin:
    monkeypatch.setattr(topic_admin, "confluent_admin", lambda props: fake)
    return TopicAdmin(alias, {"bootstrap.servers": "127.0.0.1:1"}, timeout_s=1)


def test_ids_of_described_topics_and_none_for_a_topic_deleted_since_it_was_listed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    admin = _admin(monkeypatch, "A", _Admin({"orders": "id-1", "gone": KafkaError.UNKNOWN_TOPIC_OR_PART}))
    assert admin.topic_ids(["orders", "gone"]) == {"orders": "id-1"}


@pytest.mark.parametrize(
    ("code", "text"),
    [(KafkaError._TRANSPORT, "_TRANSPORT"), (KafkaError.TOPIC_AUTHORIZATION_FAILED, "TOPIC_AUTHORIZATION_FAILED")],
)
def test_any_other_failure_to_describe_raises_naming_the_cluster(
    monkeypatch: pytest.MonkeyPatch, code: int, text: str
) -> None:
    admin = _admin(monkeypatch, "B", _Admin({"orders": "id-1", "payments": code}))
    with pytest.raises(KafkaOperationError, match=f"cluster B: describe topics failed: {text}"):
        admin.topic_ids(["orders", "payments"])


def test_partition_counts_keep_a_topic_with_a_leaderless_partition_and_skip_a_failed_topic(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    leaderless = _Partition(leader=-1, error=KafkaError(KafkaError.LEADER_NOT_AVAILABLE))
    metadata = _Metadata(
        {
            "orders": _Topic({0: _Partition(), 1: leaderless}),
            "secret": _Topic({}, error=KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)),
        }
    )
    admin = _admin(monkeypatch, "A", _Admin(metadata=metadata))
    assert admin.partition_counts() == {"orders": 2}
    assert admin.list_topics()["orders"].ready is False  # what topic-sync asks: not ready, yet data-mirror copies


def test_size_limits_and_a_failure_to_read_one_raises_naming_the_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    admin = _admin(monkeypatch, "B", _Admin({"A.orders": "1048588", "A.denied": KafkaError.TOPIC_AUTHORIZATION_FAILED}))
    assert admin.max_message_bytes(["A.orders"]) == {"A.orders": 1048588}
    assert admin.max_message_bytes([]) == {}
    with pytest.raises(KafkaOperationError, match=r"cluster B: describe topic configs on A\.denied failed"):
        admin.max_message_bytes(["A.orders", "A.denied"])


class _ExistingTopicAdmin:
    """The topic exists already (made by an earlier version); describing or altering it answers `refusal`."""

    def __init__(self, refusal: int | None, *, on: str) -> None:
        self.refusal, self.on = refusal, on
        self.altered: list[Any] = []

    def create_topics(self, topics: list[Any], **_: Any) -> dict[str, Future[Any]]:
        return {topic.topic: _done(error=KafkaError.TOPIC_ALREADY_EXISTS) for topic in topics}

    def describe_configs(self, resources: list[ConfigResource], request_timeout: float) -> dict[Any, Future[Any]]:
        if self.on == "describe" and self.refusal is not None:
            return {resource: _done(error=self.refusal) for resource in resources}
        entry = ConfigEntry("segment.ms", "604800000", source=ConfigSource.DEFAULT_CONFIG)
        return {resource: _done({entry.name: entry}) for resource in resources}

    def incremental_alter_configs(self, resources: list[ConfigResource], request_timeout: float) -> dict[Any, Any]:
        self.altered += resources
        refused = self.refusal if self.on == "alter" else None
        return {resource: _done(error=refused) for resource in resources}


@pytest.mark.parametrize("on", ["describe", "alter"])
def test_an_older_internal_topic_the_service_may_not_reconfigure_is_used_as_it_is(
    monkeypatch: pytest.MonkeyPatch, on: str
) -> None:
    """No ALTER_CONFIGS (or DESCRIBE_CONFIGS) on an internal topic an earlier version made: the service goes on with
    the topic as it is, and says which settings it could not apply."""
    fake = _ExistingTopicAdmin(KafkaError.TOPIC_AUTHORIZATION_FAILED, on=on)
    admin = _admin(monkeypatch, "B", fake)
    with capture_logs() as logs:
        created = admin.ensure_internal_topic("strait.status.internal", replication_factor=1, configs=ROLLED_COMPACTED)
    assert created is False
    (warning,) = [entry for entry in logs if entry["event"] == "internal_topic_settings_not_applied"]
    assert warning["topic"] == "strait.status.internal"
    assert "TOPIC_AUTHORIZATION_FAILED" in warning["error"]
    assert warning["settings"] == ROLLED
    if on == "describe":
        assert fake.altered == [], "nothing is set without knowing what the topic sets itself"


def test_an_older_internal_topic_gets_the_segment_settings_it_takes_from_the_broker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = _ExistingTopicAdmin(None, on="alter")
    admin = _admin(monkeypatch, "B", fake)
    with capture_logs() as logs:
        assert (
            admin.ensure_internal_topic("strait.status.internal", replication_factor=1, configs=ROLLED_COMPACTED)
            is False
        )
    (resource,) = fake.altered
    assert {entry.name: entry.value for entry in resource.incremental_configs} == ROLLED
    assert [entry["event"] for entry in logs] == ["internal_topic_settings_applied"]


class _PolicyAdmin:
    """A cluster whose topic policy refuses segment settings (as a managed Kafka with floors on segments may)."""

    def __init__(self) -> None:
        self.created: list[dict[str, str]] = []

    def create_topics(self, topics: list[Any], **_: Any) -> dict[str, Future[Any]]:
        answers = {}
        for topic in topics:
            refused = "segment.bytes" in topic.config
            if not refused:
                self.created.append(dict(topic.config))
            answers[topic.topic] = _done(error=KafkaError.POLICY_VIOLATION if refused else None)
        return answers


def test_a_cluster_whose_policy_refuses_the_segment_settings_gets_the_topic_compacted_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = _PolicyAdmin()
    admin = _admin(monkeypatch, "B", fake)
    with capture_logs() as logs:
        assert admin.ensure_internal_topic("strait.status.internal", replication_factor=1, configs=ROLLED_COMPACTED)
    assert fake.created == [{"cleanup.policy": "compact"}]
    (warning,) = [entry for entry in logs if entry["event"] == "internal_topic_settings_not_applied"]
    assert "POLICY_VIOLATION" in warning["error"]
