"""topic-sync: for every served flow, one active instance (lease) keeps the remote topics in step with the source."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from services.topic_sync.job import TopicSyncJob
from services.topic_sync.metrics import TopicSyncMetrics
from services.topic_sync.settings import TopicSyncSettings
from shared.config import FlowConfig, MirrorMakerConfig
from shared.control import ControlPublisher
from shared.kafka.topic_admin import TopicAdmin
from shared.leader_loop import LeaderLoop
from shared.leader_service import LeaderLoopService, leader_flow_loop, selected_flows

SERVICE = "topic-sync"


class TopicSyncService(LeaderLoopService):
    """Runs one LeaderLoop with a TopicSyncJob per flow."""

    name = SERVICE


def flow_loop(flow: FlowConfig, settings: TopicSyncSettings, metrics: TopicSyncMetrics) -> LeaderLoop:
    """The lease, status publisher and job of one flow (clients connect when the loop runs)."""

    def make_job(publisher: ControlPublisher, timeout_s: float) -> TopicSyncJob:
        return TopicSyncJob(
            flow,
            source=TopicAdmin(flow.source, flow.source_admin_props(), timeout_s=timeout_s),
            target=TopicAdmin(flow.target, flow.target_admin_props(), timeout_s=timeout_s),
            publisher=publisher,
            metrics=metrics,
        )

    return leader_flow_loop(
        SERVICE,
        flow,
        instance_id=settings.instance_id,
        status_interval_s=settings.status_interval_s,
        metrics=metrics.common,
        make_job=make_job,
    )


def build(settings: TopicSyncSettings, config: MirrorMakerConfig, registry: CollectorRegistry) -> TopicSyncService:
    """The service for the flows `settings.flows` names, or every enabled flow."""
    metrics = TopicSyncMetrics(registry)
    return TopicSyncService([flow_loop(flow, settings, metrics) for flow in selected_flows(config, settings.flows)])
