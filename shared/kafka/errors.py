"""Map Kafka client exceptions onto Strait's error tree at the boundary."""

from __future__ import annotations

from confluent_kafka import KafkaError

from shared.errors import AuthorizationError, KafkaOperationError
from shared.kafka.error_classes import ErrorClass, error_class, kafka_error_of

_AUTHORIZATION_CODES = frozenset(
    {
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.GROUP_AUTHORIZATION_FAILED,
        KafkaError.CLUSTER_AUTHORIZATION_FAILED,
        KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        KafkaError.DELEGATION_TOKEN_AUTHORIZATION_FAILED,
        KafkaError.SASL_AUTHENTICATION_FAILED,
    }
)


def translate_kafka_error(exc: BaseException, *, operation: str, resource: str = "") -> KafkaOperationError:
    """A KafkaOperationError (or AuthorizationError) describing `exc`; raise it `from exc`."""
    error = kafka_error_of(exc)
    if error is not None:
        where = f" on {resource}" if resource else ""
        message = f"{operation}{where} failed: {error.name()}: {error.str()}"
        if error.code() in _AUTHORIZATION_CODES:
            return AuthorizationError(message, operation=operation, resource=resource)
        # (librdkafka marks errors it builds from per-group and per-partition results of admin calls as not
        # retriable whatever their code: the table says whether the code is)
        retriable = bool(error.retriable()) or error_class(int(error.code())) is ErrorClass.RETRY
        return KafkaOperationError(message, operation=operation, retriable=retriable)
    code = getattr(exc, "errno", None)
    name = type(exc).__name__
    if "Authorization" in name or "Authentication" in name:
        return AuthorizationError(f"{operation} failed: {name}: {exc}", operation=operation, resource=resource)
    retriable = bool(getattr(exc, "retriable", True))
    suffix = f" (code {code})" if code is not None else ""
    return KafkaOperationError(f"{operation} failed: {name}{suffix}: {exc}", operation=operation, retriable=retriable)
