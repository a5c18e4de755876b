"""Topic metadata, configs, creation and growth on one cluster (blocking confluent-kafka; use asyncio.to_thread).

Results are plain data. Every failure becomes a StraitError naming the cluster, the operation and the
topic; per-topic failures are returned next to the results so one bad topic never hides the others.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Literal

import structlog
from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import (
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    ResourceType,
)

from shared.errors import StraitError
from shared.kafka.cluster_errors import cluster_error, kafka_error_code
from shared.kafka.error_classes import TOPIC_GONE
from shared.kafka.factories import confluent_admin
from shared.kafka.topics import COMPACTED, ROLLED, ensure_internal_topic

_log = structlog.get_logger(__name__)
DESCRIBE_BATCH = 500
Failures = dict[str, StraitError]
DEFAULT_CONFIG = "DEFAULT_CONFIG"
STATIC_BROKER_CONFIG = "STATIC_BROKER_CONFIG"
DYNAMIC_TOPIC_CONFIG = "DYNAMIC_TOPIC_CONFIG"


@dataclass(frozen=True, slots=True)
class TopicInfo:
    """A topic as one metadata listing shows it; `ready` when every partition has a leader."""

    partitions: int
    ready: bool = True


@dataclass(frozen=True, slots=True)
class NewTopicSpec:
    """A topic to create: name, partition count and topic-level configs."""

    name: str
    partitions: int
    configs: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ConfigEntrySpec:
    """One described topic config entry as plain data; `source` is Kafka's ConfigSource name."""

    name: str
    value: str | None
    source: str
    read_only: bool = False
    sensitive: bool = False

    @property
    def is_default(self) -> bool:
        """As Kafka's ConfigEntry.isDefault: the value comes from the built-in default."""
        return self.source == DEFAULT_CONFIG

    @property
    def set_on_topic(self) -> bool:
        """True if the topic itself overrides this property."""
        return self.source == DYNAMIC_TOPIC_CONFIG


@dataclass(frozen=True, slots=True)
class ConfigOp:
    """One incremental alter operation on a topic: SET a value or DELETE the topic's override."""

    name: str
    op: Literal["SET", "DELETE"]
    value: str | None = None


class TopicAdmin:
    """Topic metadata, configs, creation and growth on the cluster `alias`."""

    def __init__(self, alias: str, props: Mapping[str, str], *, timeout_s: float) -> None:
        self.alias = alias
        self._timeout_s = timeout_s
        self._props = dict(props)
        self._admin = confluent_admin(props)

    def _error(self, exc: BaseException, operation: str, resource: str = "") -> StraitError:
        return cluster_error(exc, cluster=self.alias, operation=operation, resource=resource)

    def _metadata(self) -> Any:
        """One metadata request. A failed one replaces the client: one whose brokers went silent (frozen, cut off)
        can keep failing with "Broker transport failure" for minutes after they answer again."""
        try:
            return self._admin.list_topics(timeout=self._timeout_s)
        except Exception as exc:  # KafkaException: broker unreachable, authorization, timeout
            self._admin = confluent_admin(self._props)
            raise self._error(exc, "list topics") from exc

    def list_topics(self) -> dict[str, TopicInfo]:
        """Every topic this principal may see, with its partition count (one metadata request)."""
        metadata = self._metadata()
        topics: dict[str, TopicInfo] = {}
        for name, topic in metadata.topics.items():
            if topic.error is not None and topic.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED:
                continue
            partitions = topic.partitions.values()
            ready = topic.error is None and all(p.leader >= 0 and p.error is None for p in partitions)
            topics[name] = TopicInfo(partitions=len(topic.partitions), ready=ready and bool(topic.partitions))
        return topics

    def partition_counts(self) -> dict[str, int]:
        """topic -> partition count of every topic listed without a topic-level error (one metadata request).

        Unlike `list_topics`, a topic one of whose partitions has no leader right now is still counted.
        """
        metadata = self._metadata()
        return {name: len(topic.partitions) for name, topic in metadata.topics.items() if topic.error is None}

    def partition_count(self, topic: str) -> int | None:
        """`topic`'s partition count, None if it does not exist; AuthorizationError when not allowed to describe it."""
        try:
            future = self._admin.describe_topics(TopicCollection([topic]), request_timeout=self._timeout_s)[topic]
            return len(future.result(timeout=self._timeout_s).partitions)
        except Exception as exc:  # KafkaException, TimeoutError: unreachable, not allowed to describe, too slow
            if kafka_error_code(exc) in TOPIC_GONE:
                return None
            raise self._error(exc, "describe topic", topic) from exc

    def topic_ids(self, topics: Sequence[str]) -> dict[str, str]:
        """Each topic's id, which changes when a topic is deleted and made again.

        A topic that vanished since it was listed is left out; any other failure raises, so a recreated topic is
        never missed silently.
        """
        if not topics:
            return {}
        ids: dict[str, str] = {}
        try:
            futures = self._admin.describe_topics(TopicCollection(list(topics)), request_timeout=self._timeout_s)
            for topic, future in futures.items():
                try:
                    ids[topic] = str(future.result(timeout=self._timeout_s).topic_id)
                except KafkaException as exc:
                    if kafka_error_code(exc) not in TOPIC_GONE:
                        raise
        except Exception as exc:  # KafkaException, TimeoutError: unreachable, not allowed to describe, too slow
            raise self._error(exc, "describe topics") from exc
        return ids

    def max_message_bytes(self, topics: Sequence[str]) -> dict[str, int]:
        """Each topic's `max.message.bytes` (the largest record batch its broker accepts); any failure raises."""
        described, errors = self.describe_configs(topics)
        if errors:
            raise errors[0]
        return {
            topic: int(entry.value)
            for topic, entries in described.items()
            for entry in entries
            if entry.name == "max.message.bytes" and entry.value is not None
        }

    def ensure_internal_topic(
        self, name: str, *, replication_factor: int, configs: Mapping[str, str] = COMPACTED
    ) -> bool:
        """Create `name` in MM2's internal-topic shape (one partition, compacted, `configs`): True if created, False
        if it was. A topic that was there gets the segment settings of `configs` it still takes from the broker (one
        an earlier version made); values set on the topic stay.

        Creation has 30 s whatever this admin's timeout; other failures raise KafkaOperationError.
        """
        try:
            created = ensure_internal_topic(self._admin, name, replication_factor=replication_factor, configs=configs)
        except KafkaException as exc:  # the request could not even be sent
            raise self._error(exc, "create topic", name) from exc
        rolled = {key: value for key, value in configs.items() if key in ROLLED}
        if not created and rolled:
            self._set_where_not_chosen(name, rolled)
        return created

    def _set_where_not_chosen(self, topic: str, wanted: Mapping[str, str]) -> None:
        """SET each of `wanted` that `topic` does not set itself; any failure (no ALTER_CONFIGS, a policy) is logged,
        not raised: the topic works as it is, only less compacted."""
        problems: list[Exception] = []
        ops: list[ConfigOp] = []
        try:
            described, errors = self.describe_configs([topic])
            problems += errors
            chosen = {entry.name for entry in described.get(topic, []) if entry.set_on_topic}
            ops = [ConfigOp(key, "SET", value) for key, value in wanted.items() if key not in chosen]
            if ops and not problems:
                problems += self.alter_configs({topic: ops}).values()
        except Exception as exc:  # best effort: the topic works as it is (the request failed, or its answer)
            problems.append(exc)
        for problem in problems:
            _log.warning("internal_topic_settings_not_applied", topic=topic, settings=dict(wanted), error=str(problem))
        if ops and not problems:
            _log.info("internal_topic_settings_applied", topic=topic, settings={op.name: op.value for op in ops})

    def describe_configs(self, topics: Sequence[str]) -> tuple[dict[str, list[ConfigEntrySpec]], list[StraitError]]:
        """Each topic's config entries; topics that failed are left out and their errors returned."""
        described: dict[str, list[ConfigEntrySpec]] = {}
        errors: list[StraitError] = []
        for start in range(0, len(topics), DESCRIBE_BATCH):
            resources = [ConfigResource(ResourceType.TOPIC, name) for name in topics[start : start + DESCRIBE_BATCH]]
            try:
                futures = self._admin.describe_configs(resources, request_timeout=self._timeout_s)
            except KafkaException as exc:
                raise self._error(exc, "describe topic configs") from exc
            for resource, future in futures.items():
                try:
                    entries: dict[str, Any] = future.result()
                except KafkaException as exc:
                    errors.append(self._error(exc, "describe topic configs", resource.name))
                    continue
                described[resource.name] = [_entry(entry) for entry in entries.values()]
        return described, errors

    def create_topics(self, topics: Sequence[NewTopicSpec], *, replication_factor: int) -> Failures:
        """Create each topic with its configs; one that already exists counts as created."""
        if not topics:
            return {}
        new = [NewTopic(t.name, t.partitions, replication_factor, config=dict(t.configs)) for t in topics]
        try:
            futures = self._admin.create_topics(new, operation_timeout=self._timeout_s, request_timeout=self._timeout_s)
        except KafkaException as exc:
            raise self._error(exc, "create topics") from exc
        return _failures(futures, self._error, "create topic", ignore=(KafkaError.TOPIC_ALREADY_EXISTS,))

    def create_partitions(self, counts: Mapping[str, int]) -> Failures:
        """Grow each topic to its count; a topic that already has that many partitions counts as grown."""
        if not counts:
            return {}
        new = [NewPartitions(topic, count) for topic, count in counts.items()]
        try:
            futures = self._admin.create_partitions(
                new, operation_timeout=self._timeout_s, request_timeout=self._timeout_s
            )
        except KafkaException as exc:
            raise self._error(exc, "create partitions") from exc
        return _failures(futures, self._error, "create partitions", ignore=(KafkaError.INVALID_PARTITIONS,))

    def alter_configs(self, ops: Mapping[str, Sequence[ConfigOp]]) -> Failures:
        """Apply incremental SET/DELETE ops per topic; properties not named are left as they are."""
        if not ops:
            return {}
        resources = [
            ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[_alter_entry(op) for op in topic_ops])
            for topic, topic_ops in ops.items()
        ]
        try:
            futures = self._admin.incremental_alter_configs(resources, request_timeout=self._timeout_s)
        except KafkaException as exc:
            raise self._error(exc, "alter topic configs") from exc
        return _failures({r.name: f for r, f in futures.items()}, self._error, "alter topic configs")


def _failures(
    futures: Mapping[str, Future[Any]],
    error: Any,
    operation: str,
    ignore: Iterable[int] = (),
) -> Failures:
    failures: Failures = {}
    ignored = set(ignore)
    for name, future in futures.items():
        try:
            future.result()
        except KafkaException as exc:
            if kafka_error_code(exc) not in ignored:
                failures[name] = error(exc, operation, name)
    return failures


def _entry(entry: Any) -> ConfigEntrySpec:
    source = entry.source if isinstance(entry.source, ConfigSource) else ConfigSource(entry.source)
    return ConfigEntrySpec(
        name=entry.name,
        value=entry.value,
        source=source.name,
        read_only=bool(entry.is_read_only),
        sensitive=bool(entry.is_sensitive),
    )


def _alter_entry(op: ConfigOp) -> ConfigEntry:
    kind = AlterConfigOpType.SET if op.op == "SET" else AlterConfigOpType.DELETE
    return ConfigEntry(op.name, op.value, incremental_operation=kind)
