"""Map Kafka client exceptions onto Strait's error tree at the boundary."""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException

from shared.errors import AuthorizationError, KafkaOperationError

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

# Retriable by the Kafka protocol, but librdkafka marks errors it builds from per-group and per-partition results of
# admin calls as not retriable whatever their code.
_RETRIABLE_CODES = frozenset(
    {
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.NOT_COORDINATOR,
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError._TIMED_OUT,  # no answer in time (a busy broker, a coordinator still loading): ask again
    }
)


def translate_kafka_error(exc: BaseException, *, operation: str, resource: str = "") -> KafkaOperationError:
    """A KafkaOperationError (or AuthorizationError) describing `exc`; raise it `from exc`."""
    error = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    if isinstance(error, KafkaError):
        where = f" on {resource}" if resource else ""
        message = f"{operation}{where} failed: {error.name()}: {error.str()}"
        if error.code() in _AUTHORIZATION_CODES:
            return AuthorizationError(message, operation=operation, resource=resource)
        retriable = bool(error.retriable()) or error.code() in _RETRIABLE_CODES
        return KafkaOperationError(message, operation=operation, retriable=retriable)
    code = getattr(exc, "errno", None)
    name = type(exc).__name__
    if "Authorization" in name or "Authentication" in name:
        return AuthorizationError(f"{operation} failed: {name}: {exc}", operation=operation, resource=resource)
    retriable = bool(getattr(exc, "retriable", True))
    suffix = f" (code {code})" if code is not None else ""
    return KafkaOperationError(f"{operation} failed: {name}{suffix}: {exc}", operation=operation, retriable=retriable)
