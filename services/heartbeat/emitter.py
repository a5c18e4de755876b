"""Write MM2 heartbeats of one pair X->Y into `heartbeats` on Y (compacted, one partition, as MM2 creates it)."""

from __future__ import annotations

import asyncio
import time

import structlog

from services.heartbeat.metrics import HeartbeatMetrics
from shared.config import FlowConfig
from shared.error_state import ErrorState
from shared.errors import StraitError
from shared.flow_context import FlowContext
from shared.kafka.record_writer import RecordWriter
from shared.kafka.topic_admin import TopicAdmin
from shared.records import Heartbeat


class HeartbeatEmitter:
    """One heartbeat per `emit.heartbeats.interval.seconds`; failures are counted and logged when they change."""

    def __init__(self, pair: FlowConfig, metrics: HeartbeatMetrics) -> None:
        self.pair = pair
        self.cluster = pair.target
        self.topic = FlowContext.of(pair).topics.heartbeats_topic
        self.interval_s = float(pair.settings.emit_heartbeats_interval_s)
        self._metrics = metrics
        self._writer: RecordWriter | None = None
        self.emitted = 0
        self.last_emit_ms: int | None = None
        self.log = structlog.get_logger("heartbeat").bind(pair=pair.name, cluster=self.cluster)
        self._errors = ErrorState(self.log, "heartbeat_emit_failed", "heartbeat_emit_recovered")

    async def emit(self) -> None:
        """Create the topic and the producer if needed, then write one heartbeat and wait for its ack."""
        try:
            if self._writer is None:
                admin = TopicAdmin(
                    self.cluster, self.pair.target_admin_props(), timeout_s=self.pair.settings.admin_timeout_ms / 1000
                )
                replication_factor = self.pair.settings.heartbeats_topic_replication_factor
                await asyncio.to_thread(admin.ensure_internal_topic, self.topic, replication_factor=replication_factor)
                self._writer = RecordWriter(self.cluster, self.pair.target_producer_props())
                self.log.info("emitting_heartbeats", topic=self.topic, interval_s=self.interval_s)
            now_ms = int(time.time() * 1000)
            heartbeat = Heartbeat(self.pair.source, self.pair.target, now_ms)
            timeout_s = max(self.interval_s * 5, 10.0)
            records = [(heartbeat.record_key(), heartbeat.record_value())]
            await asyncio.to_thread(self._writer.write, self.topic, records, timeout_s=timeout_s)
        except StraitError as exc:
            self._metrics.emit_errors.labels(self.pair.name).inc()
            self._errors.failed(exc, retriable=exc.retriable)
            return
        self._errors.cleared()
        self.emitted += 1
        self.last_emit_ms = now_ms
        self._metrics.emitted.labels(self.pair.name).inc()

    @property
    def last_error(self) -> str | None:
        """Why the last heartbeat was not written; None once one was."""
        return self._errors.current

    def details(self) -> dict[str, object]:
        """Figures for the status record."""
        return {
            "cluster": self.cluster,
            "topic": self.topic,
            "emitted": self.emitted,
            "last_emit_ts": self.last_emit_ms,
            "error": self.last_error,
        }

    async def close(self) -> None:
        """Deliver what is queued and let the producer go."""
        if self._writer is not None:
            await asyncio.to_thread(self._writer.close)
            self._writer = None
