"""Which heartbeats this process emits and which mirrored heartbeat topics it watches (pure).

MM2 runs a heartbeat connector for every ordered pair X->Y of clusters (even when the flow X->Y is
disabled, unless its heartbeats are turned off); it writes Heartbeat(X, Y) into `heartbeats` on Y, the
pair's target. So for flow A->B the pair B->A fills `heartbeats` on A (key B, A), which A->B mirrors to
B as `A.heartbeats`, and the pair A->B fills `heartbeats` on B (key A, B). Strait emits the same records:
for each served flow, the flow's own pair and its reverse, when they emit heartbeats.
"""

from __future__ import annotations

from collections.abc import Sequence

from shared.config import FlowConfig, MirrorMakerConfig


def emitting_pairs(config: MirrorMakerConfig, flows: Sequence[FlowConfig]) -> list[FlowConfig]:
    """The pairs whose heartbeats this process writes, each once: for A->B, B->A (into A) and A->B (into B)."""
    pairs: list[FlowConfig] = []
    for flow in flows:
        for pair in (config.flow(flow.target, flow.source), flow):
            if pair.emits_heartbeats and pair not in pairs:
                pairs.append(pair)
    return pairs


def heartbeat_sources(config: MirrorMakerConfig, cluster: str) -> list[FlowConfig]:
    """The pairs whose heartbeats Strait writes into `cluster`: X->cluster, when it emits and X and `cluster`
    share an enabled flow (a heartbeat service serving that flow emits the pair)."""
    return [
        pair
        for pair in config.flows
        if pair.target == cluster
        and pair.emits_heartbeats
        and (pair.enabled or config.flow(pair.target, pair.source).enabled)
    ]


def watched_flows(config: MirrorMakerConfig, flows: Sequence[FlowConfig]) -> list[FlowConfig]:
    """Served flows whose liveness can be seen: their source receives heartbeats and they mirror them."""
    return [
        flow
        for flow in flows
        if flow.settings.heartbeats_replication_enabled and heartbeat_sources(config, flow.source)
    ]


def stall_after_s(config: MirrorMakerConfig, flow: FlowConfig, *, intervals: float, minimum_s: float) -> float:
    """Seconds without a new mirrored heartbeat after which `flow` counts as stalled."""
    emitters = heartbeat_sources(config, flow.source)
    interval = max((pair.settings.emit_heartbeats_interval_s for pair in emitters), default=1)
    return max(intervals * interval, minimum_s)
