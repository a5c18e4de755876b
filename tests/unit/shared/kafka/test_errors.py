"""Kafka client errors become Strait errors that say whether trying again can help."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from shared.errors import AuthorizationError
from shared.kafka.errors import translate_kafka_error


@pytest.mark.parametrize(
    "code",
    [
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError._TIMED_OUT,  # seen from alter offsets on a new cluster whose coordinator was still loading
    ],
)
def test_a_moving_or_loading_group_coordinator_is_worth_retrying(code: int) -> None:
    # Built the way an admin result's per-group error reaches us: librdkafka calls these not retriable.
    error = translate_kafka_error(KafkaException(KafkaError(code)), operation="alter consumer group offsets")
    assert error.retriable
    assert KafkaError(code).name() in str(error)


def test_an_invalid_config_is_not_worth_retrying() -> None:
    error = translate_kafka_error(KafkaException(KafkaError(KafkaError.INVALID_CONFIG)), operation="create topic")
    assert not error.retriable


def test_a_refused_permission_names_the_resource() -> None:
    error = translate_kafka_error(
        KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)), operation="produce", resource="orders"
    )
    assert isinstance(error, AuthorizationError)
    assert "produce on orders failed: TOPIC_AUTHORIZATION_FAILED" in str(error)
