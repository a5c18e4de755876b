"""acl-sync's Prometheus metrics (labels: flow), registered on the process's registry."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge

from shared.leader_loop import LeaderMetrics

PREFIX = "strait_acl_sync"


class AclSyncMetrics:
    """ACLs created, bindings wanted on the target, clusters without an authorizer; plus the leader set."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.common = LeaderMetrics.create(registry, PREFIX)
        self.acls_created = Counter(
            f"{PREFIX}_acls_created", "ACL bindings created on remote topics", ["flow"], registry=registry
        )
        self.remote_acls = Gauge(
            f"{PREFIX}_remote_acls", "ACL bindings the source calls for on the target", ["flow"], registry=registry
        )
        self.authorizer_missing = Gauge(
            f"{PREFIX}_authorizer_missing",
            "1 while a cluster of the flow has no ACL authorizer (SECURITY_DISABLED), so ACL sync is skipped",
            ["flow", "cluster"],
            registry=registry,
        )
