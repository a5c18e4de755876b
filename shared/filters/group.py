"""Group filter: which consumer groups a flow checkpoints (MM2's GroupFilter / DefaultGroupFilter)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from shared.filters._patterns import compile_pattern_list, full_match

GROUPS_INCLUDE_DEFAULT: tuple[str, ...] = (".*",)
GROUPS_EXCLUDE_DEFAULT: tuple[str, ...] = ("console-consumer-.*", "connect-.*", "__.*")


@runtime_checkable
class GroupFilter(Protocol):
    """Decides whether a consumer group's offsets are checkpointed."""

    def should_replicate_group(self, group: str) -> bool:
        """True if `group` should be checkpointed."""
        ...


KNOWN_GROUPS_MAX = 100_000


class DefaultGroupFilter:
    """`groups` / `groups.exclude`: included by a full match of the joined include list, not excluded.

    An empty include list matches nothing.
    """

    def __init__(
        self,
        include: Sequence[str] = GROUPS_INCLUDE_DEFAULT,
        exclude: Sequence[str] = GROUPS_EXCLUDE_DEFAULT,
    ) -> None:
        self._include = compile_pattern_list(include, key="groups")
        self._exclude = compile_pattern_list(exclude, key="groups.exclude")
        self._known: dict[str, bool] = {}  # checkpoint asks for every commit it reads: match each name once

    def should_replicate_group(self, group: str) -> bool:
        """True if `group` fully matches an include pattern and no exclude pattern."""
        known = self._known.get(group)
        if known is None:
            if len(self._known) >= KNOWN_GROUPS_MAX:
                self._known.clear()
            known = self._known[group] = full_match(self._include, group) and not full_match(self._exclude, group)
        return known
