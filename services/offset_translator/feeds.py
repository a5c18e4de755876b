"""The topics the index follows, and on which cluster: one TopicFollower each, wired to the index."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import NamedTuple

from services.offset_translator.index import TranslatorIndex
from shared.config import FlowConfig
from shared.control.topic_names import DR_TOPIC, STATUS_TOPIC
from shared.errors import KafkaOperationError
from shared.flow_context import FlowContext
from shared.kafka.follow import RecordsHandler, TopicFollower

ErrorSink = Callable[[str, KafkaOperationError], None]


def _follower(
    props: Mapping[str, str],
    topic: str,
    cluster: str,
    handle: RecordsHandler,
    on_error: ErrorSink,
    on_caught_up: Callable[[], None] | None = None,
) -> TopicFollower:
    where = f"{topic} on {cluster}"
    return TopicFollower(props, topic, handle, on_caught_up=on_caught_up, on_error=partial(on_error, where))


class Feeds(NamedTuple):
    """Every follower, and the status topic's per target cluster (whose fetches say whether the cluster is read)."""

    followers: list[TopicFollower]
    status: dict[str, TopicFollower]


def build_followers(index: TranslatorIndex, flows: tuple[FlowConfig, ...], on_error: ErrorSink) -> Feeds:
    """Per flow: checkpoints, mirrored heartbeats and data-mirror's progress on the target, offset syncs where they
    live; per target cluster: the status and DR topics."""
    followers: list[TopicFollower] = []
    status: dict[str, TopicFollower] = {}
    for config in flows:
        flow = index.flows[(config.source, config.target)]
        target_props = config.target_consumer_props()
        sync_props = FlowContext.of(config).offset_syncs.consumer_props(config)
        followers += [
            _follower(
                target_props,
                flow.checkpoints_topic,
                flow.target,
                partial(index.on_checkpoint_records, flow.key),
                on_error,
                partial(index.mark_checkpoints_loaded, flow.key),
            ),
            _follower(
                sync_props,
                flow.offset_syncs_topic,
                flow.offset_syncs_cluster,
                partial(index.on_sync_records, flow.key),
                on_error,
                partial(index.mark_syncs_loaded, flow.key),
            ),
            _follower(
                target_props,
                flow.heartbeats_topic,
                flow.target,
                partial(index.on_heartbeat_records, flow.key),
                on_error,
            ),
            _follower(
                target_props,
                FlowContext.of(config).progress_topic,
                flow.target,
                partial(index.on_progress_records, flow.key),
                on_error,
            ),
        ]
        if flow.target not in status:
            status[flow.target] = _follower(
                target_props, STATUS_TOPIC, flow.target, partial(index.on_status_records, flow.target), on_error
            )
            followers += [
                status[flow.target],
                _follower(target_props, DR_TOPIC, flow.target, partial(index.on_dr_records, flow.target), on_error),
            ]
    return Feeds(followers, status)
