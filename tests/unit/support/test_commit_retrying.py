"""The tests' commit helper waits out a group coordinator that is being placed, and nothing else.

CI failed a checkpoint test when a new cluster's broker answered an outside commit with "Not coordinator": librdkafka
does not retry a failed commit, so every test helper that commits goes through `commit_retrying`.
"""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from tests.support.kafka_io import commit_retrying


class _Committer:
    """A consumer's commit that answers with `failures` in turn, then succeeds."""

    def __init__(self, *failures: int) -> None:
        self.failures = list(failures)
        self.commits: list[list[TopicPartition] | None] = []

    def commit(self, offsets: list[TopicPartition] | None = None, asynchronous: bool = True) -> None:
        assert asynchronous is False
        self.commits.append(offsets)
        if self.failures:
            raise KafkaException(KafkaError(self.failures.pop(0)))


def test_a_commit_answered_while_the_coordinator_moves_or_loads_is_sent_again_until_it_lands() -> None:
    committer = _Committer(KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS)
    offsets = [TopicPartition("orders", 0, 300)]
    commit_retrying(committer, offsets)  # type: ignore[arg-type]
    assert committer.commits == [offsets, offsets, offsets]


def test_a_commit_the_broker_refuses_for_good_fails_at_once() -> None:
    committer = _Committer(KafkaError.GROUP_AUTHORIZATION_FAILED)
    with pytest.raises(KafkaException) as raised:
        commit_retrying(committer, [TopicPartition("orders", 0, 300)])  # type: ignore[arg-type]
    assert raised.value.args[0] == KafkaError(KafkaError.GROUP_AUTHORIZATION_FAILED)
    assert len(committer.commits) == 1


def test_a_member_commits_its_positions_when_no_offsets_are_given() -> None:
    committer = _Committer(KafkaError.NOT_COORDINATOR)
    commit_retrying(committer)  # type: ignore[arg-type]
    assert committer.commits == [None, None]
