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

# The codes Kafka's protocol marks retriable (their exceptions are RetriableException in Kafka 4.3's clients), by
# name: aiokafka's flags and names stop near code 69 and miss some older ones, so a fenced leader epoch (74), which
# a broker answers to reads while it shuts down or a leader moves, was no retriable error. Left out: CORRUPT_MESSAGE
# (2), which Kafka retries but which, about a batch Strait forwards as it came (its checksum checked on the way),
# is the target's validator refusing those bytes: sent again, refused again, and the partition would stall unseen.
RETRIABLE_NAMES = {
    3: "UNKNOWN_TOPIC_OR_PARTITION",
    5: "LEADER_NOT_AVAILABLE",
    6: "NOT_LEADER_OR_FOLLOWER",
    7: "REQUEST_TIMED_OUT",
    9: "REPLICA_NOT_AVAILABLE",
    13: "NETWORK_EXCEPTION",
    14: "COORDINATOR_LOAD_IN_PROGRESS",
    15: "COORDINATOR_NOT_AVAILABLE",
    16: "NOT_COORDINATOR",
    19: "NOT_ENOUGH_REPLICAS",
    20: "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
    41: "NOT_CONTROLLER",
    51: "CONCURRENT_TRANSACTIONS",
    56: "KAFKA_STORAGE_ERROR",
    70: "FETCH_SESSION_ID_NOT_FOUND",
    71: "INVALID_FETCH_SESSION_EPOCH",
    72: "LISTENER_NOT_FOUND",
    74: "FENCED_LEADER_EPOCH",
    75: "UNKNOWN_LEADER_EPOCH",
    78: "OFFSET_NOT_AVAILABLE",
    80: "PREFERRED_LEADER_NOT_AVAILABLE",
    83: "ELIGIBLE_LEADERS_NOT_AVAILABLE",
    84: "ELECTION_NOT_NEEDED",
    88: "UNSTABLE_OFFSET_COMMIT",
    89: "THROTTLING_QUOTA_EXCEEDED",
    100: "UNKNOWN_TOPIC_ID",
    103: "INCONSISTENT_TOPIC_ID",
    106: "FETCH_SESSION_TOPIC_ID_ERROR",
    122: "SHARE_SESSION_NOT_FOUND",
    123: "INVALID_SHARE_SESSION_EPOCH",
    133: "SHARE_SESSION_LIMIT_REACHED",
}
RETRIABLE = frozenset(RETRIABLE_NAMES)
# Codes past aiokafka's table that the batch path meets and an operator should read by name.
NEWER_NAMES = {
    87: "INVALID_RECORD",
    90: "PRODUCER_FENCED",
    105: "TRANSACTIONAL_ID_NOT_FOUND",
    110: "FENCED_MEMBER_EPOCH",
}
# A leader epoch the broker fenced or does not know. Retriable for a reader that checks epochs itself (the batch
# copier refreshes and asks again); from librdkafka's consumer, which reports them only once its own position check
# could not go on, they fail the task, whose restart checks the position against the source log (KIP-320).
EPOCH_UNSURE = frozenset({74, 75})


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


def error_class(
    code: int, *, fatal: bool = False, retriable: bool = False, reading: bool = False, consumer: bool = False
) -> ErrorClass:
    """The class of error `code` (a broker's code, or librdkafka's negative one); `fatal` and `retriable` as the
    client said (a code Kafka's protocol marks retriable is RETRY whatever the client said). `reading`: the code
    answered a fetch, where UNKNOWN_SERVER_ERROR is RETRY as in Kafka's own consumer (a broker shutting down answers
    reads of the logs it is closing with it), not a refusal of records nobody sent. `consumer`: librdkafka's consumer
    reported it (see EPOCH_UNSURE)."""
    if fatal or code in CLIENT_BROKEN or code in PRODUCER_BROKEN or (consumer and code in EPOCH_UNSURE):
        return ErrorClass.FAIL_TASK
    if code in TOPIC_GONE:
        return ErrorClass.TOPIC_GONE
    if retriable or code in CLIENT_TRANSIENT or code in RETRIABLE:
        return ErrorClass.RETRY
    if reading and code == UNKNOWN_SERVER_ERROR:
        return ErrorClass.RETRY
    return ErrorClass.REFUSE_RECORD


def client_error_class(error: KafkaError, *, reading: bool = False, consumer: bool = False) -> ErrorClass:
    """`error_class` of a confluent-kafka error."""
    return error_class(
        int(error.code()),
        fatal=bool(error.fatal()),
        retriable=bool(error.retriable()),
        reading=reading,
        consumer=consumer,
    )


def kafka_error_of(exc: BaseException) -> KafkaError | None:
    """The KafkaError a confluent-kafka exception carries, or None (another exception, or none inside)."""
    error = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    return error if isinstance(error, KafkaError) else None


def error_name(code: int) -> str:
    """The Kafka name of an error code (MESSAGE_TOO_LARGE, UNKNOWN_SERVER_ERROR, ...)."""
    if code == UNKNOWN_SERVER_ERROR:
        return "UNKNOWN_SERVER_ERROR"  # aiokafka names it UNKNOWN
    if code in RETRIABLE_NAMES:
        return RETRIABLE_NAMES[code]
    if code in NEWER_NAMES:
        return NEWER_NAMES[code]
    cls = for_code(code)
    name = str(getattr(cls, "message", cls.__name__)).upper()
    return f"error code {code}" if name == "UNKNOWN" else name  # a code newer than aiokafka's table
