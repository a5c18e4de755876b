"""acl-sync's process settings: the shared ones, its metrics port and how often it reports status."""

from __future__ import annotations

from pydantic import Field

from shared.config.service_settings import ServiceSettings


class AclSyncSettings(ServiceSettings):
    """Flags, then STRAIT_* environment variables (STRAIT_STATUS_INTERVAL_S, ...), then these defaults."""

    metrics_port: int = Field(default=9403, ge=0, le=65535, description="0 picks a free port")
    status_interval_s: float = Field(default=5.0, gt=0, description="seconds between status records per flow")
