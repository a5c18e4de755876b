"""audit's process settings: the shared ones, its metrics port, and how much it may read and how often."""

from __future__ import annotations

from pydantic import Field

from shared.config.service_settings import ServiceSettings


class AuditSettings(ServiceSettings):
    """Flags, then STRAIT_* environment variables (STRAIT_AUDIT_BUDGET_MIB_S, ...), then these defaults."""

    metrics_port: int = Field(default=9406, ge=0, le=65535, description="0 picks a free port")
    status_interval_s: float = Field(default=5.0, gt=0, description="seconds between status records per flow")
    audit_interval_s: float = Field(default=10.0, gt=0, description="seconds from one audit round to the next")
    audit_budget_mib_s: float = Field(
        default=16.0, gt=0, description="MiB per second the audit may read, source and target together"
    )
    audit_sample_percent: float = Field(
        default=100.0, gt=0, le=100, description="share of newly copied ranges verified; the rest are skipped"
    )
    audit_window: int = Field(default=20_000, ge=100, description="records read ahead to realign after a gap")
