"""topic-sync: for every served flow, one active instance (lease) keeps the remote topics in step with the source."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from services.topic_sync.job import TopicSyncJob
from services.topic_sync.metrics import TopicSyncMetrics
from services.topic_sync.settings import TopicSyncSettings
from shared.config import MirrorMakerConfig
from shared.control import ControlPublisher
from shared.flow_context import FlowContext
from shared.flow_selection import selected_flows
from shared.kafka.topic_admin import TopicAdmin
from shared.leader_service import LeaderLoopService, leader_service

SERVICE = "topic-sync"


def build(settings: TopicSyncSettings, config: MirrorMakerConfig, registry: CollectorRegistry) -> LeaderLoopService:
    """The service for the flows `settings.flows` names, or every enabled flow (clients connect when it runs)."""
    metrics = TopicSyncMetrics(registry)

    def make_job(context: FlowContext, publisher: ControlPublisher, timeout_s: float) -> TopicSyncJob:
        flow = context.flow
        return TopicSyncJob(
            context,
            source=TopicAdmin(flow.source, flow.source_admin_props(), timeout_s=timeout_s),
            target=TopicAdmin(flow.target, flow.target_admin_props(), timeout_s=timeout_s),
            publisher=publisher,
            metrics=metrics,
        )

    return leader_service(SERVICE, settings, selected_flows(config, settings.flows), metrics.common, make_job)
