"""What a Kafka error means for a copy: refuse the record, retry, fail the task, or the topic is gone.

One table for every copier and reader: the batch path asks with the broker's codes (its own protocol client), the
record path with confluent-kafka's errors, the admin calls with either. A class says what the error is about, not
what a caller does with it: a client that retries by itself (librdkafka) reports a RETRY error only once it gave up,
so the record copier fails its task then, while the batch producer sends again.
"""

from __future__ import annotations

from enum import Enum

from aiokafka.errors import for_code
from confluent_kafka import KafkaError, KafkaException

from shared.kafka.error_codes import (
    CLUSTER_AUTHORIZATION_FAILED,
    DUPLICATE_SEQUENCE_NUMBER,
    INVALID_PRODUCER_EPOCH,
    OUT_OF_ORDER_SEQUENCE_NUMBER,
    PRODUCER_FENCED,
    UNKNOWN_PRODUCER_ID,
    UNKNOWN_SERVER_ERROR,
    UNKNOWN_TOPIC_ID,
    UNKNOWN_TOPIC_OR_PARTITION,
)

INVALID_TXN_STATE = 48


class ErrorClass(Enum):
    REFUSE_RECORD = "refuse the record"  # about the records (too large, invalid, not allowed): stop the partition
    RETRY = "retry"  # transient (a leader moved, a timeout, a coordinator loading): ask again
    FAIL_TASK = "fail the task"  # about the producer or the request: restart from the committed progress
    TOPIC_GONE = "topic gone"  # the topic or partition is not there (deleted, or not known yet)


# A topic or partition that does not exist (any more, or not yet), from the broker or from librdkafka.
TOPIC_GONE = frozenset(
    {UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID, KafkaError._UNKNOWN_TOPIC, KafkaError._UNKNOWN_PARTITION}
)
# About the producer, its sequence or its transaction, or a permission on the whole cluster: no record is to blame.
PRODUCER_BROKEN = frozenset(
    {
        DUPLICATE_SEQUENCE_NUMBER,
        INVALID_PRODUCER_EPOCH,
        UNKNOWN_PRODUCER_ID,
        PRODUCER_FENCED,
        OUT_OF_ORDER_SEQUENCE_NUMBER,
        INVALID_TXN_STATE,
        CLUSTER_AUTHORIZATION_FAILED,
    }
)
# librdkafka's own outcomes that are about the client or the connection, never a record.
CLIENT_BROKEN = frozenset(
    {
        KafkaError._FENCED,
        KafkaError._FATAL,
        KafkaError._STATE,
        KafkaError._PURGE_QUEUE,
        KafkaError._PURGE_INFLIGHT,
        KafkaError._DESTROY,
    }
)
# librdkafka's own outcomes that are transient: no answer in time, the connection lost.
CLIENT_TRANSIENT = frozenset(
    {KafkaError._MSG_TIMED_OUT, KafkaError._TIMED_OUT, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN}
)


def error_class(code: int, *, fatal: bool = False, retriable: bool = False) -> ErrorClass:
    """The class of error `code` (a broker's code, or librdkafka's negative one); `fatal` and `retriable` as the
    client said (a code Kafka's protocol marks retriable is RETRY whatever the client said)."""
    if fatal or code in CLIENT_BROKEN or code in PRODUCER_BROKEN:
        return ErrorClass.FAIL_TASK
    if code in TOPIC_GONE:
        return ErrorClass.TOPIC_GONE
    if retriable or code in CLIENT_TRANSIENT or _retriable_in_protocol(code):
        return ErrorClass.RETRY
    return ErrorClass.REFUSE_RECORD


def client_error_class(error: KafkaError) -> ErrorClass:
    """`error_class` of a confluent-kafka error."""
    return error_class(int(error.code()), fatal=bool(error.fatal()), retriable=bool(error.retriable()))


def kafka_error_of(exc: BaseException) -> KafkaError | None:
    """The KafkaError a confluent-kafka exception carries, or None (another exception, or none inside)."""
    error = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    return error if isinstance(error, KafkaError) else None


def error_name(code: int) -> str:
    """The Kafka name of an error code (MESSAGE_TOO_LARGE, UNKNOWN_SERVER_ERROR, ...)."""
    if code == UNKNOWN_SERVER_ERROR:
        return "UNKNOWN_SERVER_ERROR"  # aiokafka names it UNKNOWN
    cls = for_code(code)
    return str(getattr(cls, "message", cls.__name__)).upper()


def _retriable_in_protocol(code: int) -> bool:
    return code > 0 and bool(getattr(for_code(code), "retriable", False))
