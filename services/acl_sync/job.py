"""One flow's acl-sync rounds: read the source's topic ACLs, create the missing ones on the remote topics.

A cluster without an ACL authorizer (SECURITY_DISABLED) is reported once when that becomes true (log,
status notice, metric) and once when it stops being true; meanwhile rounds keep the normal interval.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import structlog

from services.acl_sync.metrics import AclSyncMetrics
from shared.acl_rules import missing_acls, remote_acls
from shared.errors import StraitError
from shared.flow_context import FlowContext
from shared.kafka.acl_admin import AclAdmin, describe

NO_AUTHORIZER = "security_disabled"


class AclSyncJob:
    """The LeaderJob of acl-sync for one flow."""

    def __init__(self, context: FlowContext, *, source: AclAdmin, target: AclAdmin, metrics: AclSyncMetrics) -> None:
        self.flow = context.flow
        self._source = source
        self._target = target
        self._metrics = metrics
        self._topics = context.topics
        self.log = structlog.get_logger("acl-sync").bind(flow=context.name)
        self._without_authorizer: dict[str, str] = {}  # alias -> role, while SECURITY_DISABLED
        self._created = 0
        self._wanted = 0

    def became_leader(self) -> None:
        """Nothing is cached between rounds: every round compares with the target as it is."""

    def interval_s(self) -> float:
        """`sync.topic.acls.interval.seconds`."""
        return float(self.flow.settings.sync_topic_acls_interval_s)

    def details(self) -> dict[str, Any]:
        """Bindings wanted and created so far, and why the sync is skipped, if it is."""
        skipped = [
            f"cluster {alias} ({role}) has no ACL authorizer (SECURITY_DISABLED): topic ACLs are not synced; "
            "set sync.topic.acls.enabled=false if that is intended"
            for alias, role in sorted(self._without_authorizer.items())
        ]
        return {"remote_acls": self._wanted, "acls_created": self._created, "skipped": skipped}

    async def run_round(self) -> Sequence[StraitError]:
        """Compute the remote bindings from the source's and create those the target lacks."""
        source = await self._source.describe_topic_acls()
        if not self._authorizer(self._source.alias, "source", present=source is not None) or source is None:
            return []
        wanted = remote_acls(
            source, should_replicate_topic=self._topics.should_replicate, remote_topic=self._topics.remote_topic
        )
        self._wanted = len(wanted)
        self._metrics.remote_acls.labels(self.flow.name).set(len(wanted))
        if not wanted:
            return []
        existing = await self._target.describe_topic_acls()
        if not self._authorizer(self._target.alias, "target", present=existing is not None) or existing is None:
            return []
        missing = missing_acls(wanted, existing)
        failures = await asyncio.to_thread(self._target.create_acls, missing)
        created = [binding for binding in missing if binding not in failures]
        for binding in created:
            self.log.info("acl_created", acl=describe(binding))
        if created:
            self._created += len(created)
            self._metrics.acls_created.labels(self.flow.name).inc(len(created))
        return list(failures.values())

    def _authorizer(self, alias: str, role: str, *, present: bool) -> bool:
        """Track whether `alias` has an authorizer; report only the changes. True if it has one."""
        reported = alias in self._without_authorizer
        if present:
            if reported:
                del self._without_authorizer[alias]
                self._metrics.authorizer_missing.labels(self.flow.name, alias).set(0)
                self.log.info("acl_authorizer_found", cluster=alias, role=role)
            return True
        if not reported:
            self._without_authorizer[alias] = role
            self._metrics.authorizer_missing.labels(self.flow.name, alias).set(1)
            self._metrics.common.errors.labels(self.flow.name, NO_AUTHORIZER, "describe ACLs").inc()
            self.log.warning(
                "acl_sync_skipped",
                cluster=alias,
                role=role,
                reason="no ACL authorizer (SECURITY_DISABLED)",
                hint="set sync.topic.acls.enabled=false if that is intended",
                retry_s=self.interval_s(),
            )
        return False
