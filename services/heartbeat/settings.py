"""heartbeat's process settings: the shared ones, its metrics port, status cadence and when a flow is stalled."""

from __future__ import annotations

from pydantic import Field

from shared.config.service_settings import ServiceSettings


class HeartbeatSettings(ServiceSettings):
    """Flags, then STRAIT_* environment variables (STRAIT_STALL_MIN_S, ...), then these defaults."""

    metrics_port: int = Field(default=9405, ge=0, le=65535, description="0 picks a free port")
    status_interval_s: float = Field(default=5.0, gt=0, description="seconds between status records per flow")
    stall_intervals: float = Field(
        default=5.0, gt=0, description="a flow is stalled when no heartbeat newer than this many intervals arrived"
    )
    stall_min_s: float = Field(default=5.0, gt=0, description="... and never sooner than this many seconds")
