"""Watch one flow's mirrored heartbeats (`<source>.heartbeats` on its target): liveness and end-to-end latency."""

from __future__ import annotations

import time
from collections.abc import Sequence

import structlog

from services.heartbeat.liveness import Liveness, LivenessState
from services.heartbeat.metrics import HeartbeatMetrics
from shared.clock_skew import AheadLog
from shared.flow_context import FlowContext
from shared.kafka.follow import FollowedRecord, TopicFollower
from shared.records import Heartbeat
from shared.records.reading import decoded


def now_ms() -> int:
    """Wall-clock time in epoch milliseconds."""
    return int(time.time() * 1000)


class FlowMonitor:
    """Follows the mirrored heartbeats topic; `check` updates the gauges and logs each liveness change."""

    def __init__(self, context: FlowContext, metrics: HeartbeatMetrics, *, stall_after_s: float) -> None:
        flow = self.flow = context.flow
        self.topic = context.topics.remote_heartbeats_topic
        self.liveness = Liveness(int(stall_after_s * 1000), now_ms())
        self.follower = TopicFollower(flow.target_consumer_props(), self.topic, self._handle)
        self._metrics = metrics
        self.state: LivenessState = "waiting"
        self.invalid_records = 0
        self.log = structlog.get_logger("heartbeat").bind(flow=flow.name)
        self._ahead_log = AheadLog(self.log)

    def _handle(self, records: Sequence[FollowedRecord]) -> None:
        # Heartbeats read before the first catch-up are history: they set the newest timestamp, but their
        # age is not a replication latency.
        live = self.follower.caught_up
        for _, heartbeat in decoded(records, lambda key, value, _: Heartbeat.decode(key, value), self._skip):
            now = now_ms()
            latency = self.liveness.observe(heartbeat.timestamp_ms, now)
            self._metrics.received.labels(self.flow.name).inc()
            if latency is None:  # stamped too far ahead: not believed
                self._metrics.ahead.labels(self.flow.name).inc()
                self._ahead_log.warn("heartbeats", heartbeat.timestamp_ms, now)  # the log names the flow
            elif live:
                self._metrics.latency_ms.labels(self.flow.name).observe(latency)
                self._metrics.last_latency_ms.labels(self.flow.name).set(latency)

    def _skip(self, record: FollowedRecord, reason: str) -> None:
        self.invalid_records += 1
        self.log.warning("invalid_heartbeat_skipped", topic=self.topic, offset=record.offset, error=reason)

    def check(self) -> bool:
        """Re-evaluate liveness now; True if the state changed."""
        now = now_ms()
        state = self.liveness.state(now)
        age = self.liveness.age_ms(now)
        self._metrics.age_ms.labels(self.flow.name).set(-1 if age is None else age)
        self._metrics.stalled.labels(self.flow.name).set(1 if state == "stalled" else 0)
        if state == self.state:
            return False
        previous, self.state = self.state, state
        if state == "stalled":
            self.log.warning(
                "flow_stalled", topic=self.topic, heartbeat_age_ms=age, stall_after_ms=self.liveness.stall_after_ms
            )
        elif state == "live":
            self.log.info("flow_live", topic=self.topic, heartbeat_age_ms=age, was=previous)
        return True

    def details(self) -> dict[str, object]:
        """Figures for the status record (`heartbeat_age_s` is what `strait status` shows)."""
        age = self.liveness.age_ms(now_ms())
        return {
            "liveness": self.state,
            "heartbeats_topic": self.topic,
            "heartbeat_age_s": None if age is None else round(age / 1000, 3),
            "last_heartbeat_ts": self.liveness.newest_ms,
            "latency_ms": self.liveness.last_latency_ms,
            "heartbeats_received": self.liveness.received,
            "stall_after_s": self.liveness.stall_after_ms / 1000,
        }
