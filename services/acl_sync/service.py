"""acl-sync: for every served flow, one active instance (lease) copies topic ACLs to the remote topics."""

from __future__ import annotations

import structlog
from prometheus_client import CollectorRegistry

from services.acl_sync.job import AclSyncJob
from services.acl_sync.metrics import AclSyncMetrics
from services.acl_sync.settings import AclSyncSettings
from shared.config import FlowConfig, MirrorMakerConfig
from shared.control import ControlPublisher
from shared.kafka.acl_admin import AclAdmin
from shared.leader_loop import LeaderLoop
from shared.leader_service import LeaderLoopService, leader_flow_loop, selected_flows

SERVICE = "acl-sync"


class AclSyncService(LeaderLoopService):
    """Runs one LeaderLoop with an AclSyncJob per flow."""

    name = SERVICE


def flow_loop(flow: FlowConfig, settings: AclSyncSettings, metrics: AclSyncMetrics) -> LeaderLoop:
    """The lease, status publisher and job of one flow (clients connect when the loop runs)."""

    def make_job(_publisher: ControlPublisher, timeout_s: float) -> AclSyncJob:
        return AclSyncJob(
            flow,
            source=AclAdmin(flow.source, flow.source_admin_props(), timeout_s=timeout_s),
            target=AclAdmin(flow.target, flow.target_admin_props(), timeout_s=timeout_s),
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


def build(settings: AclSyncSettings, config: MirrorMakerConfig, registry: CollectorRegistry) -> AclSyncService:
    """The service for the flows `settings.flows` names (or every enabled flow) that sync ACLs."""
    metrics = AclSyncMetrics(registry)
    loops = []
    for flow in selected_flows(config, settings.flows):
        if not flow.settings.sync_topic_acls_enabled:
            structlog.get_logger(SERVICE).info("acl_sync_disabled", flow=flow.name, key="sync.topic.acls.enabled")
            continue
        loops.append(flow_loop(flow, settings, metrics))
    return AclSyncService(loops)
