"""audit: for every served flow, one active instance (lease) verifies what data-mirror copies, as it lands."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from services.audit.job import AuditJob
from services.audit.metrics import AuditMetrics
from services.audit.settings import AuditSettings
from services.audit.watch import AuditLimits
from shared.config import MirrorMakerConfig
from shared.control import ControlPublisher
from shared.flow_context import FlowContext
from shared.flow_selection import selected_flows
from shared.leader_service import LeaderLoopService, leader_service
from shared.reshape.python_transforms import check_functions

SERVICE = "audit"


def build(settings: AuditSettings, config: MirrorMakerConfig, registry: CollectorRegistry) -> LeaderLoopService:
    """The service for the flows `settings.flows` names, or every enabled flow (clients connect when it runs); a
    Python transform of theirs that cannot be imported stops it here, as it stops data-mirror."""
    flows = selected_flows(config, settings.flows)
    for flow in flows:
        check_functions(flow.transforms)
    metrics = AuditMetrics(registry)
    budget_bytes = int(settings.audit_budget_mib_s * 2**20 * settings.audit_interval_s)

    def make_job(context: FlowContext, _publisher: ControlPublisher, timeout_s: float) -> AuditJob:
        limits = AuditLimits(budget_bytes, settings.audit_sample_percent, settings.audit_window, max(timeout_s, 30))
        return AuditJob(context, limits, metrics, settings.audit_interval_s)

    return leader_service(SERVICE, settings, flows, metrics.common, make_job)
