"""DefaultConfigPropertyFilter: excluded properties and `use.defaults.from`."""

from __future__ import annotations

import pytest

from shared.errors import ConfigError
from shared.filters import ConfigPropertyFilter, DefaultConfigPropertyFilter


def test_config_property_matching() -> None:
    property_filter = DefaultConfigPropertyFilter(exclude=["prop2"])
    assert property_filter.should_replicate_config_property("prop1")
    assert not property_filter.should_replicate_config_property("prop2")


@pytest.mark.parametrize(
    "name",
    [
        "follower.replication.throttled.replicas",
        "leader.replication.throttled.replicas",
        "message.timestamp.difference.max.ms",
        "message.timestamp.type",
        "unclean.leader.election.enable",
        "min.insync.replicas",
    ],
)
def test_default_excludes(name: str) -> None:
    assert not DefaultConfigPropertyFilter().should_replicate_config_property(name)


def test_default_excludes_are_literal_dots() -> None:
    property_filter = DefaultConfigPropertyFilter()
    assert property_filter.should_replicate_config_property("min_insync_replicas")
    assert property_filter.should_replicate_config_property("retention.ms")
    assert property_filter.should_replicate_config_property("cleanup.policy")


def test_empty_exclude_replicates_everything() -> None:
    assert DefaultConfigPropertyFilter(exclude=[]).should_replicate_config_property("min.insync.replicas")


def test_use_defaults_from() -> None:
    assert not DefaultConfigPropertyFilter().should_replicate_source_default("retention.ms")
    assert not DefaultConfigPropertyFilter(use_defaults_from="target").should_replicate_source_default("x")
    assert DefaultConfigPropertyFilter(use_defaults_from="source").should_replicate_source_default("retention.ms")


def test_use_defaults_from_rejects_other_values() -> None:
    with pytest.raises(ConfigError) as info:
        DefaultConfigPropertyFilter(use_defaults_from="Source")
    assert info.value.key == "use.defaults.from"
    assert info.value.value == "Source"


def test_is_a_config_property_filter() -> None:
    assert isinstance(DefaultConfigPropertyFilter(), ConfigPropertyFilter)
