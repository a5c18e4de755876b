"""DefaultGroupFilter: MM2's MirrorCheckpointConfigTest vectors and its default excludes."""

from __future__ import annotations

import pytest

from shared.errors import ConfigError
from shared.filters import DefaultGroupFilter, GroupFilter


def test_group_matching() -> None:
    group_filter = DefaultGroupFilter(include=["group1"])
    assert group_filter.should_replicate_group("group1")
    assert not group_filter.should_replicate_group("group2")


def test_no_groups() -> None:
    group_filter = DefaultGroupFilter(include=[])
    assert not group_filter.should_replicate_group("group1")
    assert not group_filter.should_replicate_group("")


@pytest.mark.parametrize(
    ("group", "replicated"),
    [
        ("billing", True),
        ("console-consumer-12345", False),
        ("connect-mirror", False),
        ("__strait", False),
        ("my-connect-app", True),
    ],
)
def test_default_excludes(group: str, replicated: bool) -> None:
    assert DefaultGroupFilter().should_replicate_group(group) is replicated


def test_invalid_regex_names_the_key() -> None:
    with pytest.raises(ConfigError) as info:
        DefaultGroupFilter(exclude=["*"])
    assert info.value.key == "groups.exclude"


def test_is_a_group_filter() -> None:
    assert isinstance(DefaultGroupFilter(), GroupFilter)
