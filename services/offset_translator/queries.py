"""The API's answers computed from the index: pure, no I/O, O(partitions of the group) on the hot path."""

from __future__ import annotations

from typing import Any

from services.offset_translator import topology
from services.offset_translator.errors import NotReadyError, UnknownGroupError, UnknownPartitionError
from services.offset_translator.index import TranslatorIndex
from services.offset_translator.models import (
    FlowInfo,
    GroupList,
    GroupOffsets,
    OffsetTranslation,
    Topology,
)
from services.offset_translator.offsets_json import GroupOffsetsJson
from shared.flow_status import STALE_AFTER_S_DEFAULT, FlowStatus, summarize_flow


def flow_infos(index: TranslatorIndex) -> list[FlowInfo]:
    """Every served flow with its topics and load state."""
    return [
        FlowInfo(
            flow=flow.name,
            source=flow.source,
            target=flow.target,
            checkpoints_topic=flow.checkpoints_topic,
            offset_syncs_topic=flow.offset_syncs_topic,
            offset_syncs_cluster=flow.offset_syncs_cluster,
            checkpoints_loaded=index.checkpoints_loaded(key),
            offset_syncs_loaded=index.syncs_loaded(key),
            groups=index.checkpoints.group_count(key),
            checkpoints=index.checkpoints.checkpoint_count(key),
        )
        for key, flow in index.flows.items()
    ]


def group_list(index: TranslatorIndex, source: str, target: str) -> GroupList:
    """Groups with checkpoints on the flow, sorted."""
    flow = index.flow(source, target)
    index.require_checkpoints(flow)
    return GroupList(source=source, target=target, groups=sorted(index.checkpoints.groups(flow.key)))


def group_offsets_document(index: TranslatorIndex, source: str, target: str, group: str, now_ms: int) -> dict[str, Any]:
    """The group's latest checkpoint per remote topic-partition (RemoteClusterUtils.translateOffsets), as the
    plain data of a `GroupOffsets`: the hot path serialises it without building a model per partition."""
    flow = index.flow(source, target)
    index.require_checkpoints(flow)
    checkpoints = index.checkpoints.sorted_group(flow.key, group)
    if checkpoints is None:
        raise UnknownGroupError(f"no checkpoint of group '{group}' in {flow.checkpoints_topic} on {target}")
    return {
        "group": group,
        "source": source,
        "target": target,
        "checkpoints_topic": flow.checkpoints_topic,
        "offsets": [
            {
                "topic": topic,
                "partition": partition,
                "offset": entry.checkpoint.downstream_offset,
                "upstream_offset": entry.checkpoint.upstream_offset,
                "metadata": entry.checkpoint.metadata,
                "checkpoint_age_ms": max(0, now_ms - entry.timestamp_ms),
            }
            for (topic, partition), entry in checkpoints
        ],
    }


def group_offsets_json(
    index: TranslatorIndex, rendered: GroupOffsetsJson, source: str, target: str, group: str, now_ms: int
) -> bytes:
    """`group_offsets_document` as JSON bytes, from the renderer's cache (the hot path of the translator)."""
    flow = index.flow(source, target)
    index.require_checkpoints(flow)
    body = rendered.render(flow, group, now_ms)
    if body is None:
        raise UnknownGroupError(f"no checkpoint of group '{group}' in {flow.checkpoints_topic} on {target}")
    return body


def group_offsets(index: TranslatorIndex, source: str, target: str, group: str, now_ms: int) -> GroupOffsets:
    """`group_offsets_document` as a validated model."""
    return GroupOffsets.model_validate(group_offsets_document(index, source, target, group, now_ms))


def translate_offset(
    index: TranslatorIndex, source: str, target: str, topic: str, partition: int, offset: int
) -> OffsetTranslation:
    """One source offset through the flow's offset syncs (exact where the syncs allow, else MM2's answer)."""
    flow = index.flow(source, target)
    index.require_syncs(flow)
    store = index.syncs[flow.key]
    exact = store.translate_exact(topic, partition, offset)
    mm2 = store.translate_downstream(topic, partition, offset)
    if exact is None or mm2 is None:
        raise UnknownPartitionError(
            f"no offset sync for {topic}-{partition} in {flow.offset_syncs_topic} on {flow.offset_syncs_cluster}"
        )
    if exact < 0:
        raise UnknownPartitionError(f"offset {offset} of {topic}-{partition} is older than every stored offset sync")
    return OffsetTranslation(
        source=source,
        target=target,
        topic=topic,
        partition=partition,
        offset=offset,
        remote_topic=flow.policy.format_remote_topic(source, topic),
        downstream_offset=exact,
        mm2_downstream_offset=None if mm2 < 0 else mm2,
    )


def cluster_topology(index: TranslatorIndex, cluster: str, now_ms: int) -> Topology:
    """MirrorClient's view of `cluster` from its last listed topic names."""
    policy = index.cluster(cluster)
    snapshot = index.topics(cluster)
    if snapshot is None:
        raise NotReadyError(f"topic names of cluster '{cluster}' not listed yet; retry shortly")
    names = snapshot.names
    upstream = topology.upstream_clusters(policy, names)
    remote = topology.remote_topics(policy, names)
    by_source: dict[str, list[str]] = {}
    for name in remote:
        by_source.setdefault(policy.topic_source(name) or "", []).append(name)
    return Topology(
        cluster=cluster,
        upstream_clusters=upstream,
        replication_hops={alias: topology.replication_hops(policy, names, alias) for alias in upstream},
        heartbeat_topics=topology.heartbeat_topics(policy, names),
        checkpoint_topics=topology.checkpoint_topics(policy, names),
        remote_topics=remote,
        remote_topics_by_source=by_source,
        listed_age_ms=max(0, now_ms - snapshot.listed_ms),
    )


def flow_status(
    index: TranslatorIndex, source: str, target: str, now_ms: int, stale_after_s: float = STALE_AFTER_S_DEFAULT
) -> FlowStatus:
    """The flow's status from the statuses on its target and its newest mirrored heartbeat."""
    flow = index.flow(source, target)
    return summarize_flow(
        source,
        target,
        index.statuses.statuses(target),
        now_ms=now_ms,
        heartbeat_ts_ms=index.statuses.heartbeat_ms(flow.key),
        stale_after_s=stale_after_s,
    )


def all_statuses(index: TranslatorIndex, now_ms: int, stale_after_s: float = STALE_AFTER_S_DEFAULT) -> list[FlowStatus]:
    """The status of every served flow."""
    return [flow_status(index, s, t, now_ms, stale_after_s) for s, t in index.flows]
