"""Create the single-partition compacted internal topics (and any topic) idempotently."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from shared.kafka.errors import translate_kafka_error
from shared.kafka.factories import confluent_admin

COMPACTED = {"cleanup.policy": "compact"}


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
        if exc.args and isinstance(exc.args[0], KafkaError) and exc.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS:
            return False
        raise translate_kafka_error(exc, operation="create topic", resource=name) from exc
    return True


def ensure_internal_topic(admin: AdminClient, name: str, *, replication_factor: int = -1) -> bool:
    """MM2's internal-topic shape: one partition, compacted."""
    return create_topic(admin, name, partitions=1, replication_factor=replication_factor, configs=COMPACTED)


def ensure_internal_topics_on(props: Mapping[str, str], names: Sequence[str], *, replication_factor: int = -1) -> None:
    """`ensure_internal_topic` for each of `names` on the cluster `props` connect to (one admin client for all)."""
    admin = confluent_admin(props)
    for name in names:
        ensure_internal_topic(admin, name, replication_factor=replication_factor)
