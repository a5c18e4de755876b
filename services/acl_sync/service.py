"""acl-sync: for every served flow, one active instance (lease) copies topic ACLs to the remote topics."""

from __future__ import annotations

import structlog
from prometheus_client import CollectorRegistry

from services.acl_sync.job import AclSyncJob
from services.acl_sync.metrics import AclSyncMetrics
from services.acl_sync.settings import AclSyncSettings
from shared.config import MirrorMakerConfig
from shared.control import ControlPublisher
from shared.flow_context import FlowContext
from shared.flow_selection import selected_flows
from shared.kafka.acl_admin import AclAdmin
from shared.leader_service import LeaderLoopService, leader_service

SERVICE = "acl-sync"


def build(settings: AclSyncSettings, config: MirrorMakerConfig, registry: CollectorRegistry) -> LeaderLoopService:
    """The service for the flows `settings.flows` names (or every enabled flow) that sync ACLs."""
    metrics = AclSyncMetrics(registry)
    flows = []
    for flow in selected_flows(config, settings.flows):
        if flow.settings.sync_topic_acls_enabled:
            flows.append(flow)
        else:
            structlog.get_logger(SERVICE).info("acl_sync_disabled", flow=flow.name, key="sync.topic.acls.enabled")

    def make_job(context: FlowContext, _publisher: ControlPublisher, timeout_s: float) -> AclSyncJob:
        flow = context.flow
        return AclSyncJob(
            context,
            source=AclAdmin(flow.source, flow.source_admin_props(), timeout_s=timeout_s),
            target=AclAdmin(flow.target, flow.target_admin_props(), timeout_s=timeout_s),
            metrics=metrics,
        )

    return leader_service(SERVICE, settings, flows, metrics.common, make_job)
