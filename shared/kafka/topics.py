"""Create the single-partition compacted internal topics (and any topic) idempotently."""

from __future__ import annotations

from collections.abc import Mapping

import structlog
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from shared.errors import StraitError
from shared.kafka.cluster_errors import kafka_error_code
from shared.kafka.error_classes import kafka_error_of
from shared.kafka.errors import translate_kafka_error

_log = structlog.get_logger(__name__)

COMPACTED = {"cleanup.policy": "compact"}
# Strait's own internal topics (progress, status, control) take a record per partition or per instance every second
# or few, and are read whole when a process starts. The log cleaner never compacts a topic's active segment, and
# Kafka's default segments (1 GiB, 7 days) let a busy flow's progress topic keep every record for an hour or more:
# at 1,000 busy partitions a million records an hour, read again by every copy task that starts (500,000 took
# 16.7 s). Small, short segments let the cleaner keep each topic near one record per key.
ROLLED = {"segment.bytes": str(16 * 1024 * 1024), "segment.ms": str(10 * 60 * 1000)}
ROLLED_COMPACTED = {**COMPACTED, **ROLLED}
# What a cluster's topic policy answers to settings it does not allow (a managed Kafka may set floors on segments).
SETTINGS_REFUSED = (KafkaError.POLICY_VIOLATION, KafkaError.INVALID_CONFIG)


def create_topic(
    admin: AdminClient,
    name: str,
    *,
    partitions: int = 1,
    replication_factor: int = -1,
    configs: Mapping[str, str] | None = None,
    timeout_s: float = 30,
) -> bool:
    """Create `name`: True if created, False if it existed; other failures raise KafkaOperationError."""
    future = admin.create_topics(
        [NewTopic(name, partitions, replication_factor, config=dict(configs or {}))],
        operation_timeout=timeout_s,
        request_timeout=timeout_s,
    )[name]
    try:
        future.result(timeout=timeout_s)
    except KafkaException as exc:
        error = kafka_error_of(exc)
        if error is not None and error.code() == KafkaError.TOPIC_ALREADY_EXISTS:
            return False
        raise translate_kafka_error(exc, operation="create topic", resource=name) from exc
    return True


def ensure_internal_topic(
    admin: AdminClient, name: str, *, replication_factor: int = -1, configs: Mapping[str, str] = COMPACTED
) -> bool:
    """MM2's internal-topic shape: one partition, compacted (`configs`: ROLLED_COMPACTED for Strait's own). A cluster
    whose policy refuses the extra settings gets the topic compacted only, and a warning naming them."""
    try:
        return create_topic(admin, name, partitions=1, replication_factor=replication_factor, configs=configs)
    except StraitError as exc:
        refused = exc.__cause__ is not None and kafka_error_code(exc.__cause__) in SETTINGS_REFUSED
        if not refused or dict(configs) == COMPACTED:
            raise
        _log.warning("internal_topic_settings_not_applied", topic=name, settings=dict(configs), error=str(exc))
    return create_topic(admin, name, partitions=1, replication_factor=replication_factor, configs=COMPACTED)
