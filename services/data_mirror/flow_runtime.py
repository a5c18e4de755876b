"""One flow as the driver sees it: its clients, internal topics and the state of every mirrored partition."""

from __future__ import annotations

import time

import structlog

from services.data_mirror.discovery import discover, policy_for
from services.data_mirror.plan import FlowClients, PartitionState
from services.data_mirror.progress_store import load_progress
from shared.config import FlowConfig
from shared.control import progress_topic
from shared.kafka.factories import confluent_admin, confluent_producer
from shared.kafka.topics import ensure_internal_topic

_log = structlog.get_logger(__name__)


class FlowRuntime:
    """Creates the flow's internal topics, loads its progress and keeps its partition set current."""

    def __init__(self, flow: FlowConfig, *, tasks: int) -> None:
        self.flow = flow
        settings = flow.settings
        policy = policy_for(flow)
        self.source_admin = confluent_admin(flow.source_admin_props())
        self.target_admin = confluent_admin(flow.target_admin_props())
        if settings.offset_syncs_topic_location == "source":
            syncs_topic, sync_props = policy.offset_syncs_topic(flow.target), flow.source_producer_props()
            syncs_admin = self.source_admin
        else:
            syncs_topic, sync_props = policy.offset_syncs_topic(flow.source), flow.target_producer_props()
            syncs_admin = self.target_admin
        consumer_props = flow.source_consumer_props()
        self.clients = FlowClients(
            flow=flow.name,
            source_consumer=consumer_props,
            source_admin=flow.source_admin_props(),
            target_producer=flow.target_producer_props(),
            sync_producer=sync_props,
            offset_syncs_topic=syncs_topic,
            progress_topic=progress_topic(flow.source),
            exactly_once=settings.exactly_once_enabled,
            offset_lag_max=settings.offset_lag_max,
            emit_offset_syncs=settings.emit_offset_syncs_enabled,
            reset_to_latest=consumer_props.get("auto.offset.reset", "earliest") == "latest",
        )
        rf = settings.offset_syncs_topic_replication_factor
        if settings.emit_offset_syncs_enabled:
            ensure_internal_topic(syncs_admin, syncs_topic, replication_factor=rf)
        ensure_internal_topic(self.target_admin, self.clients.progress_topic, replication_factor=rf)
        if settings.exactly_once_enabled:
            self._fence_previous_transactions(tasks)
        self.committed = load_progress(flow.target_consumer_props(), self.clients.progress_topic, flow.name)
        self.states: dict[tuple[str, int], PartitionState] = {}
        self.waiting: list[str] = []
        _log.info("flow_loaded", flow=flow.name, partitions_with_progress=len(self.committed), syncs_topic=syncs_topic)

    def _fence_previous_transactions(self, tasks: int) -> None:
        """Abort transactions a killed predecessor left open, so the progress topic reads to its end now."""
        for slot in range(max(tasks, 8)):
            producer = confluent_producer(
                self.flow.target_producer_props(),
                **{"transactional.id": f"strait-data-mirror.{self.flow.name}.{slot}", "enable.idempotence": True},
            )
            producer.init_transactions(30)
            producer.flush(5)

    def refresh(self) -> bool:
        """Re-read both clusters' topics; True if the partition set changed."""
        mirrored, self.waiting = discover(self.flow, self.source_admin, self.target_admin)
        wanted: set[tuple[str, int]] = set()
        changed = False
        for topic in mirrored:
            for partition in range(topic.partitions):
                key = (topic.source_topic, partition)
                wanted.add(key)
                if key not in self.states:
                    changed = True
                    self.states[key] = PartitionState(
                        self.flow.name, topic.source_topic, partition, topic.remote_topic, self.committed.get(key)
                    )
        for key in set(self.states) - wanted:
            changed = True
            _log.warning("partition_no_longer_mirrored", flow=self.flow.name, topic=key[0], partition=key[1])
            del self.states[key]
        return changed

    def blocked(self) -> list[PartitionState]:
        """Partitions whose next record the target refused."""
        return [state for state in self.states.values() if state.blocked_at is not None]

    def records_behind(self) -> int:
        """Sum of known records behind."""
        return sum(state.records_behind or 0 for state in self.states.values())

    @staticmethod
    def now() -> float:
        """Monotonic clock used for retry times."""
        return time.monotonic()
