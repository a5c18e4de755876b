"""Which flows a topic-sync (or acl-sync) process serves, and the names of its lease."""

from __future__ import annotations

import pytest

from shared.config import parse_mm2_config
from shared.errors import AuthorizationError, ConfigError, KafkaOperationError
from shared.flow_selection import selected_flows
from shared.flow_topics import FlowTopics
from shared.leader_loop import error_kind

BASE = {"clusters": "A, B, C", **{f"{x}.bootstrap.servers": f"{x.lower()}:9092" for x in "ABC"}}


def test_every_enabled_flow_is_served_by_default() -> None:
    config = parse_mm2_config({**BASE, "A->B.enabled": "true", "B->A.enabled": "true"}, env={})
    assert [flow.name for flow in selected_flows(config, "")] == ["A->B", "B->A"]


def test_flows_named_in_settings_are_the_only_ones_served() -> None:
    config = parse_mm2_config({**BASE, "A->B.enabled": "true", "B->A.enabled": "true"}, env={})
    assert [flow.name for flow in selected_flows(config, " B -> A ,B->A")] == ["B->A"]


@pytest.mark.parametrize(
    ("props", "flows", "message"),
    [
        ({}, "", "no enabled flow"),
        ({"A->B.enabled": "true"}, "A->C", "flow 'A->C' is not enabled"),
        ({"A->B.enabled": "true"}, "A->X", "unknown cluster alias 'X'"),
    ],
)
def test_nothing_to_serve_is_a_config_error(props: dict[str, str], flows: str, message: str) -> None:
    config = parse_mm2_config({**BASE, **props}, env={})
    with pytest.raises(ConfigError, match=message):
        selected_flows(config, flows)


def test_lease_names_are_per_service_and_flow_and_internal() -> None:
    flow = parse_mm2_config({**BASE, "A->B.enabled": "true"}, env={}).flow("A", "B")
    names = FlowTopics.for_flow(flow)
    assert names.lease_group("topic-sync") == "strait.topic-sync.A->B"
    assert names.lease_topic("topic-sync") == "strait.lease.topic-sync.A.B.internal"
    assert names.lease_topic("acl-sync").endswith(".internal")


def test_errors_are_counted_by_kind() -> None:
    denied = AuthorizationError("cluster B: create topic on A.x failed", operation="create topic", resource="A.x")
    assert error_kind(denied) == "authorization"
    assert error_kind(KafkaOperationError("timed out", operation="list topics")) == "kafka"
    assert error_kind(ConfigError("bad")) == "config"
