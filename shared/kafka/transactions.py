"""Fence transactional ids: whatever transaction an earlier producer with the same id left open is aborted.

Blocking (confluent-kafka): `init_transactions` bumps the id's epoch, which fences the old producer and makes
the coordinator abort its open transaction, so read_committed readers can read past it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from confluent_kafka import KafkaException

from shared.kafka.cluster_errors import cluster_error
from shared.kafka.factories import confluent_producer


def fence_transactional_ids(
    props: Mapping[str, str], transactional_ids: Iterable[str], *, cluster: str, timeout_s: float = 30
) -> None:
    """Fence each id in turn on the cluster `cluster` (producer `props`); a failure raises KafkaOperationError."""
    for transactional_id in transactional_ids:
        producer = confluent_producer(props, **{"transactional.id": transactional_id, "enable.idempotence": True})
        try:
            producer.init_transactions(timeout_s)
        except KafkaException as exc:
            raise cluster_error(
                exc, cluster=cluster, operation="fence transactions", resource=transactional_id
            ) from exc
        producer.flush(5)
