"""data-mirror's process settings (flags and STRAIT_* environment variables)."""

from __future__ import annotations

from pydantic import Field

from shared.config.service_settings import ServiceSettings

PROG = "strait-data-mirror"  # the process's name: its logs, its metrics' registry, its Kafka clients' ids


class DataMirrorSettings(ServiceSettings):
    """Commit interval, task count and Spark master; `spark.*` keys in the config file pass through too."""

    metrics_port: int = Field(default=9401, ge=0, le=65535)
    commit_interval_ms: int = Field(
        default=1000,
        ge=50,
        description="how often each copy task commits its progress (and, exactly-once, its transaction)",
    )
    tasks: int = Field(
        default=0,
        ge=0,
        description="long-lived copy tasks per flow; 0: Spark's default parallelism shared by the flows",
    )
    spark_master: str = Field(default="", description="overrides spark.master from the config (default local[*])")
    blocked_retry_s: float = Field(default=30, gt=0, description="how often a refused record is tried again")
    status_interval_s: float = Field(default=5, gt=0)
    mm2_metric_names: bool = Field(
        default=True, description="also export the per-partition metrics under MM2's (Strimzi's) names"
    )
