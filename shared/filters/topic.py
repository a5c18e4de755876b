"""Topic filter: which source topics a flow replicates (MM2's TopicFilter / DefaultTopicFilter)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from shared.filters._patterns import compile_pattern_list, full_match

TOPICS_INCLUDE_DEFAULT: tuple[str, ...] = (".*",)
TOPICS_EXCLUDE_DEFAULT: tuple[str, ...] = (r".*[\-\.]internal", r".*\.replica", "__.*")


@runtime_checkable
class TopicFilter(Protocol):
    """Decides whether a topic's name makes it a candidate for replication."""

    def should_replicate_topic(self, topic: str) -> bool:
        """True if `topic` should be replicated."""
        ...


class DefaultTopicFilter:
    """`topics` / `topics.exclude`: included by a full match of the joined include list, not excluded.

    An empty include list matches nothing (MM2: a blank property matches no topic).
    """

    def __init__(
        self,
        include: Sequence[str] = TOPICS_INCLUDE_DEFAULT,
        exclude: Sequence[str] = TOPICS_EXCLUDE_DEFAULT,
    ) -> None:
        self._include = compile_pattern_list(include, key="topics")
        self._exclude = compile_pattern_list(exclude, key="topics.exclude")

    def should_replicate_topic(self, topic: str) -> bool:
        """True if `topic` fully matches an include pattern and no exclude pattern."""
        return full_match(self._include, topic) and not full_match(self._exclude, topic)
