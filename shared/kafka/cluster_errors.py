"""Kafka client errors that name the cluster they happened on, for services that talk to two clusters."""

from __future__ import annotations

from shared.errors import AuthorizationError, KafkaOperationError
from shared.kafka.error_classes import kafka_error_of
from shared.kafka.errors import translate_kafka_error


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
    error = kafka_error_of(exc)
    return None if error is None else int(error.code())
