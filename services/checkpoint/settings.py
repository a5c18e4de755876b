"""checkpoint's process settings: the shared ones, its metrics port, sharding and status cadence."""

from __future__ import annotations

from pydantic import Field

from shared.config.service_settings import ServiceSettings


class CheckpointSettings(ServiceSettings):
    """Flags, then STRAIT_* environment variables (STRAIT_SHARDS, STRAIT_STATUS_INTERVAL_S, ...), then defaults."""

    metrics_port: int = Field(default=9404, ge=0, le=65535, description="0 picks a free port")
    status_interval_s: float = Field(default=5.0, gt=0, description="seconds between status records per flow")
    mm2_metric_names: bool = Field(
        default=True, description="also export checkpoint latency per group-partition under MM2's (Strimzi's) names"
    )
    shards: int = Field(
        default=16,
        ge=1,
        le=1024,
        description="consumer groups are split into this many shards, spread over the running instances",
    )
