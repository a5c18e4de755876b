"""One flow as the driver sees it: its clients, internal topics and the state of every mirrored partition."""

from __future__ import annotations

import dataclasses
import time

import structlog

from services.data_mirror.discovery import discover, max_message_bytes
from services.data_mirror.plan import FlowClients, PartitionState
from services.data_mirror.progress_store import load_progress
from shared.config import FlowConfig
from shared.control import progress_topic
from shared.flow_topics import FlowTopics
from shared.kafka.factories import confluent_admin, confluent_producer
from shared.kafka.topics import ensure_internal_topic

_log = structlog.get_logger(__name__)
DEFAULT_BATCH_BYTES = 1_000_000  # librdkafka's batch.size default
BATCH_HEADROOM_BYTES = 512  # record-batch header and per-record framing
LIMITS_REFRESH_S = 60


class FlowRuntime:
    """Creates the flow's internal topics, loads its progress and keeps its partition set current."""

    def __init__(self, flow: FlowConfig, *, tasks: int) -> None:
        self.flow = flow
        settings = flow.settings
        policy = FlowTopics.for_flow(flow).policy
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
        self.limits: dict[str, int] = {}
        self._limits_refreshed = 0.0
        self._configured_batch = int(self.clients.target_producer.get("batch.size", DEFAULT_BATCH_BYTES))
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
        self._refresh_limits([topic.remote_topic for topic in mirrored])
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
                self.states[key].max_record_bytes = self.limits.get(topic.remote_topic)
        for key in set(self.states) - wanted:
            changed = True
            _log.warning("partition_no_longer_mirrored", flow=self.flow.name, topic=key[0], partition=key[1])
            del self.states[key]
        return changed

    def _refresh_limits(self, remote_topics: list[str]) -> None:
        """Learn new remote topics' size limits (all of them every minute) and keep batches under the smallest."""
        stale = time.monotonic() - self._limits_refreshed > LIMITS_REFRESH_S
        wanted = remote_topics if stale else [t for t in remote_topics if t not in self.limits]
        if stale:
            self._limits_refreshed = time.monotonic()
        self.limits.update(max_message_bytes(self.target_admin, self.flow.target, wanted))
        smallest = min((self.limits[t] for t in remote_topics if t in self.limits), default=DEFAULT_BATCH_BYTES)
        batch = max(1024, min(self._configured_batch, smallest - BATCH_HEADROOM_BYTES))
        if str(batch) != self.clients.target_producer.get("batch.size"):
            producer = {**self.clients.target_producer, "batch.size": str(batch)}
            self.clients = dataclasses.replace(self.clients, target_producer=producer)

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
