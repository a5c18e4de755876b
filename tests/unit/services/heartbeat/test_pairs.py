"""Which heartbeats are emitted where (MM2's pair model) and which flows are watched, from the config."""

from __future__ import annotations

from services.heartbeat.pairs import emitting_pairs, stall_after_s, watched_flows
from shared.config import MirrorMakerConfig, parse_mm2_config

BASE = {
    "clusters": "A, B, C",
    "A.bootstrap.servers": "a:9092",
    "B.bootstrap.servers": "b:9092",
    "C.bootstrap.servers": "c:9092",
}


def parse(**extra: str) -> MirrorMakerConfig:
    return parse_mm2_config({**BASE, **extra}, env={})


def names(flows: object) -> list[str]:
    return [flow.name for flow in flows]  # type: ignore[attr-defined]


def test_a_flow_emits_into_its_source_through_the_reverse_pair_and_into_its_target() -> None:
    config = parse(**{"A->B.enabled": "true"})
    pairs = emitting_pairs(config, config.enabled_flows)
    # B->A writes Heartbeat(B, A) into `heartbeats` on A (mirrored to B as A.heartbeats); A->B writes on B.
    assert [(p.source, p.target) for p in pairs] == [("B", "A"), ("A", "B")]


def test_pairs_are_emitted_once_for_an_active_active_pair() -> None:
    config = parse(**{"A->B.enabled": "true", "B->A.enabled": "true"})
    assert names(emitting_pairs(config, config.enabled_flows)) == ["B->A", "A->B"]


def test_heartbeats_turned_off_for_a_pair_are_not_emitted() -> None:
    config = parse(**{"A->B.enabled": "true", "B->A.emit.heartbeats.enabled": "false"})
    assert names(emitting_pairs(config, config.enabled_flows)) == ["A->B"]
    config = parse(**{"A->B.enabled": "true", "emit.heartbeats.enabled": "false"})
    assert emitting_pairs(config, config.enabled_flows) == []


def test_a_flow_is_watched_only_if_heartbeats_reach_its_source_and_are_replicated() -> None:
    config = parse(**{"A->B.enabled": "true"})
    assert names(watched_flows(config, config.enabled_flows)) == ["A->B"]
    off = parse(**{"A->B.enabled": "true", "emit.heartbeats.enabled": "false"})
    assert watched_flows(off, off.enabled_flows) == []
    reverse_off = parse(**{"A->B.enabled": "true", "B->A.emit.heartbeats.enabled": "false"})
    assert watched_flows(reverse_off, reverse_off.enabled_flows) == []  # C shares no enabled flow with A
    via_c = parse(**{"A->B.enabled": "true", "C->A.enabled": "true", "B->A.emit.heartbeats.enabled": "false"})
    assert names(watched_flows(via_c, via_c.enabled_flows)) == ["A->B", "C->A"]  # C->A still writes into A
    unreplicated = parse(**{"A->B.enabled": "true", "A->B.heartbeats.replication.enabled": "false"})
    assert watched_flows(unreplicated, unreplicated.enabled_flows) == []


def test_stall_threshold_is_a_few_emit_intervals_of_the_pairs_writing_into_the_source() -> None:
    config = parse(**{"A->B.enabled": "true", "B->A.emit.heartbeats.interval.seconds": "4"})
    flow = config.flow("A", "B")
    assert stall_after_s(config, flow, intervals=5, minimum_s=5) == 20
    assert stall_after_s(parse(**{"A->B.enabled": "true"}), flow, intervals=5, minimum_s=5) == 5
