"""DefaultTopicFilter: MM2's MirrorSourceConfigTest vectors and its default excludes."""

from __future__ import annotations

import pytest

from shared.errors import ConfigError
from shared.filters import DefaultTopicFilter, TopicFilter


def test_topic_matching() -> None:
    topic_filter = DefaultTopicFilter(include=["topic1"])
    assert topic_filter.should_replicate_topic("topic1")
    assert not topic_filter.should_replicate_topic("topic2")


def test_no_topics() -> None:
    topic_filter = DefaultTopicFilter(include=[])
    assert not topic_filter.should_replicate_topic("topic1")
    assert not topic_filter.should_replicate_topic("topic2")
    assert not topic_filter.should_replicate_topic("")


def test_all_topics() -> None:
    topic_filter = DefaultTopicFilter(include=[".*"])
    assert topic_filter.should_replicate_topic("topic1")
    assert topic_filter.should_replicate_topic("topic2")


def test_list_of_topics() -> None:
    topic_filter = DefaultTopicFilter(include=["topic1", "topic2"])
    assert topic_filter.should_replicate_topic("topic1")
    assert topic_filter.should_replicate_topic("topic2")
    assert not topic_filter.should_replicate_topic("topic3")


def test_full_match_not_prefix_or_search() -> None:
    topic_filter = DefaultTopicFilter(include=["orders", "pay.*"], exclude=[])
    assert topic_filter.should_replicate_topic("orders")
    assert not topic_filter.should_replicate_topic("orders-eu")
    assert not topic_filter.should_replicate_topic("eu-orders")
    assert topic_filter.should_replicate_topic("payments")
    # Alternation is tried as a whole: the second branch fully matches even though the first is a prefix.
    assert DefaultTopicFilter(include=["pay", "payments"], exclude=[]).should_replicate_topic("payments")


@pytest.mark.parametrize(
    ("topic", "replicated"),
    [
        ("orders", True),
        ("mm2-offset-syncs.B.internal", False),
        ("connect-offsets-internal", False),
        ("orders.replica", False),
        ("__consumer_offsets", False),
        ("internal", True),
        ("orders_internal", True),
    ],
)
def test_default_excludes(topic: str, replicated: bool) -> None:
    assert DefaultTopicFilter().should_replicate_topic(topic) is replicated


def test_exclude_wins_over_include() -> None:
    topic_filter = DefaultTopicFilter(include=["orders.*"], exclude=["orders-test"])
    assert topic_filter.should_replicate_topic("orders-prod")
    assert not topic_filter.should_replicate_topic("orders-test")


def test_invalid_regex_names_the_key() -> None:
    with pytest.raises(ConfigError) as info:
        DefaultTopicFilter(include=["("])
    assert info.value.key == "topics"
    with pytest.raises(ConfigError) as info:
        DefaultTopicFilter(exclude=["[a-"])
    assert info.value.key == "topics.exclude"


def test_bare_string_is_rejected() -> None:
    with pytest.raises(ConfigError):
        DefaultTopicFilter(include="orders")


def test_is_a_topic_filter() -> None:
    assert isinstance(DefaultTopicFilter(), TopicFilter)
