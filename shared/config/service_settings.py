"""Typed process settings every service shares (where the config file is, metrics port, identity)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


def default_instance_id() -> str:
    """host-pid: unique per process, readable in status tables."""
    return f"{socket.gethostname()}-{os.getpid()}"


class ServiceSettings(BaseSettings):
    """Read from the command line, then STRAIT_* environment variables, then defaults."""

    model_config = SettingsConfigDict(env_prefix="STRAIT_", extra="ignore", frozen=True)

    config: Path = Field(description="MM2-format properties file")
    metrics_host: str = "127.0.0.1"
    metrics_port: int = Field(default=0, ge=0, le=65535, description="0 picks a free port")
    instance_id: str = Field(default_factory=default_instance_id)
    log_level: str = "INFO"
    flows: str = Field(default="", description="comma list of flows (A->B) this process serves; empty: all enabled")
