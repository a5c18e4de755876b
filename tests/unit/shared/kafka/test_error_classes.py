"""One table says what a Kafka error is about, for the batch producer (broker codes) and the record path
(confluent-kafka errors) alike: the two lists they kept before disagreed."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError

from shared.kafka.error_classes import ErrorClass, client_error_class, error_class, error_name
from shared.kafka.error_codes import (
    CLUSTER_AUTHORIZATION_FAILED,
    DUPLICATE_SEQUENCE_NUMBER,
    MESSAGE_TOO_LARGE,
    NOT_LEADER_OR_FOLLOWER,
    OUT_OF_ORDER_SEQUENCE_NUMBER,
    PRODUCER_FENCED,
    TOPIC_AUTHORIZATION_FAILED,
    UNKNOWN_SERVER_ERROR,
    UNKNOWN_TOPIC_ID,
    UNKNOWN_TOPIC_OR_PARTITION,
)

INVALID_TIMESTAMP = 32
NOT_ENOUGH_REPLICAS = 19


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (MESSAGE_TOO_LARGE, ErrorClass.REFUSE_RECORD),
        (INVALID_TIMESTAMP, ErrorClass.REFUSE_RECORD),
        (TOPIC_AUTHORIZATION_FAILED, ErrorClass.REFUSE_RECORD),
        (UNKNOWN_SERVER_ERROR, ErrorClass.REFUSE_RECORD),
        (NOT_LEADER_OR_FOLLOWER, ErrorClass.RETRY),
        (NOT_ENOUGH_REPLICAS, ErrorClass.RETRY),
        # retriable in Kafka's protocol but unknown to aiokafka's table: a broker shutting down answers reads with
        # FENCED_LEADER_EPOCH, which failed the batch copier's tasks with every broker stopped
        (74, ErrorClass.RETRY),
        (75, ErrorClass.RETRY),
        (13, ErrorClass.RETRY),
        (51, ErrorClass.RETRY),
        (2, ErrorClass.REFUSE_RECORD),  # CORRUPT_MESSAGE about bytes forwarded as they came: sent again, refused again
        (UNKNOWN_TOPIC_OR_PARTITION, ErrorClass.TOPIC_GONE),
        (UNKNOWN_TOPIC_ID, ErrorClass.TOPIC_GONE),
        (OUT_OF_ORDER_SEQUENCE_NUMBER, ErrorClass.FAIL_TASK),
        (DUPLICATE_SEQUENCE_NUMBER, ErrorClass.FAIL_TASK),
        (PRODUCER_FENCED, ErrorClass.FAIL_TASK),
        (CLUSTER_AUTHORIZATION_FAILED, ErrorClass.FAIL_TASK),
    ],
)
def test_a_broker_code_has_one_class(code: int, expected: ErrorClass) -> None:
    assert error_class(code) is expected


def test_a_fenced_or_unknown_leader_epoch_from_librdkafkas_consumer_fails_the_task() -> None:
    """librdkafka reports these only once its own position check could not go on: retried in place, the partition
    stalled after an unclean election (test_source_truncation, record path, data-mirror frozen across it); the
    restart checks the position against the source log. The batch copier, which checks epochs itself, retries."""
    for code in (74, 75):
        assert client_error_class(KafkaError(code), reading=True, consumer=True) is ErrorClass.FAIL_TASK
        assert error_class(code, reading=True) is ErrorClass.RETRY


def test_a_code_newer_than_aiokafkas_table_is_named() -> None:
    assert error_name(74) == "FENCED_LEADER_EPOCH"
    assert error_name(UNKNOWN_SERVER_ERROR) == "UNKNOWN_SERVER_ERROR"
    assert error_name(TOPIC_AUTHORIZATION_FAILED) == "TOPIC_AUTHORIZATION_FAILED"
    assert error_name(131) == "error code 131"


def test_a_fetch_answered_unknown_server_error_is_fetched_again_not_a_failed_task() -> None:
    """A broker shutting down answers reads of the logs it is closing with UNKNOWN_SERVER_ERROR (seen with every
    broker stopped under a running copy): Kafka's consumer fetches again, and so do both copiers; the same code on a
    produce is still a refusal of the records sent."""
    assert error_class(UNKNOWN_SERVER_ERROR, reading=True) is ErrorClass.RETRY
    assert client_error_class(KafkaError(KafkaError.UNKNOWN), reading=True) is ErrorClass.RETRY
    assert error_class(UNKNOWN_SERVER_ERROR) is ErrorClass.REFUSE_RECORD
    assert error_class(MESSAGE_TOO_LARGE, reading=True) is ErrorClass.REFUSE_RECORD


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (KafkaError.MSG_SIZE_TOO_LARGE, ErrorClass.REFUSE_RECORD),
        (KafkaError.INVALID_TIMESTAMP, ErrorClass.REFUSE_RECORD),
        # the record path refused these as records before (its list lacked them; the batch producer's had them)
        (KafkaError.CLUSTER_AUTHORIZATION_FAILED, ErrorClass.FAIL_TASK),
        (KafkaError.DUPLICATE_SEQUENCE_NUMBER, ErrorClass.FAIL_TASK),
        # a delivery report never says retriable: a code the protocol calls transient is no refused record
        (KafkaError.NOT_ENOUGH_REPLICAS, ErrorClass.RETRY),
        (KafkaError._MSG_TIMED_OUT, ErrorClass.RETRY),
        (KafkaError._TRANSPORT, ErrorClass.RETRY),
        (KafkaError._UNKNOWN_TOPIC, ErrorClass.TOPIC_GONE),
        (KafkaError._FENCED, ErrorClass.FAIL_TASK),
        (KafkaError._PURGE_QUEUE, ErrorClass.FAIL_TASK),
    ],
)
def test_a_client_error_has_the_class_of_its_code(code: int, expected: ErrorClass) -> None:
    assert client_error_class(KafkaError(code)) is expected


def test_what_the_client_says_is_fatal_or_transient_wins_over_the_code() -> None:
    assert client_error_class(KafkaError(KafkaError.MSG_SIZE_TOO_LARGE, fatal=True)) is ErrorClass.FAIL_TASK
    assert client_error_class(KafkaError(KafkaError.MSG_SIZE_TOO_LARGE, retriable=True)) is ErrorClass.RETRY
