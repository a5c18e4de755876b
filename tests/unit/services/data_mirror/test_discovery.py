"""Topic-id look-ups: a vanished topic is left out, every other failure is raised with the cluster named."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from services.data_mirror.discovery import topic_ids
from shared.errors import KafkaOperationError


@dataclass
class _Described:
    topic_id: str


def _done(result: object = None, error: int | None = None) -> Future[Any]:
    future: Future[Any] = Future()
    if error is None:
        future.set_result(result)
    else:
        future.set_exception(KafkaException(KafkaError(error)))
    return future


class _Admin:
    """describe_topics answering per topic from `answers`: an id, or an error code."""

    def __init__(self, answers: dict[str, str | int]) -> None:
        self.answers = answers

    def describe_topics(self, topics: Any, request_timeout: float) -> dict[str, Future[Any]]:
        return {
            name: _done(_Described(answer)) if isinstance(answer, str) else _done(error=answer)
            for name, answer in self.answers.items()
        }


def test_ids_of_described_topics_and_none_for_a_topic_deleted_since_it_was_listed() -> None:
    admin = _Admin({"orders": "id-1", "gone": KafkaError.UNKNOWN_TOPIC_OR_PART})
    assert topic_ids(admin, "A", ["orders", "gone"]) == {"orders": "id-1"}  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("code", "text"),
    [(KafkaError._TRANSPORT, "_TRANSPORT"), (KafkaError.TOPIC_AUTHORIZATION_FAILED, "TOPIC_AUTHORIZATION_FAILED")],
)
def test_any_other_failure_is_raised_naming_the_cluster(code: int, text: str) -> None:
    admin = _Admin({"orders": "id-1", "payments": code})
    with pytest.raises(KafkaOperationError, match=f"describe topics on B failed: {text}"):
        topic_ids(admin, "B", ["orders", "payments"])  # type: ignore[arg-type]
