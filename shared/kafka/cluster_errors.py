"""Kafka client errors that name the cluster they happened on, for services that talk to two clusters, and the
error codes that say a topic is gone."""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException

from shared.errors import AuthorizationError, KafkaOperationError
from shared.kafka.error_codes import UNKNOWN_TOPIC_ID  # KafkaError.UNKNOWN_TOPIC_ID: the client's stubs lack it
from shared.kafka.errors import translate_kafka_error

# Errors that say a topic or partition does not exist (any more, or not yet).
TOPIC_GONE = frozenset(
    {KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC, KafkaError._UNKNOWN_PARTITION, UNKNOWN_TOPIC_ID}
)


def cluster_error(exc: BaseException, *, cluster: str, operation: str, resource: str = "") -> KafkaOperationError:
    """Like `translate_kafka_error`, with the message prefixed by `cluster <alias>: `; raise it `from exc`.

    An authorization failure stays an AuthorizationError, so its message names the cluster, the operation
    and the resource, e.g. `cluster B: create topic on A.orders failed: TOPIC_AUTHORIZATION_FAILED: ...`.
    """
    translated = translate_kafka_error(exc, operation=operation, resource=resource)
    message = f"cluster {cluster}: {translated.message}"
    if isinstance(translated, AuthorizationError):
        return AuthorizationError(message, operation=operation, resource=resource)
    return KafkaOperationError(message, operation=operation, retriable=translated.retriable)


def kafka_error_code(exc: BaseException) -> int | None:
    """The broker or client error code inside a confluent-kafka exception, or None."""
    error = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    return int(error.code()) if isinstance(error, KafkaError) else None
