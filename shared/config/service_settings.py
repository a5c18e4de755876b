"""Typed process settings every service shares (where the config file is, metrics port, identity)."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


def default_instance_id() -> str:
    """host-pid: unique per process, readable in status tables."""
    return f"{socket.gethostname()}-{os.getpid()}"


@dataclass(frozen=True)
class CliFlag:
    """A command-line flag a service adds to the common ones; `dest` is the settings field it sets."""

    flag: str
    help: str | None  # None: accepted but not listed in --help
    dest: str | None = None
    type: type = str


class ServiceSettings(BaseSettings):
    """Read from the command line, then STRAIT_* environment variables, then defaults."""

    model_config = SettingsConfigDict(env_prefix="STRAIT_", extra="ignore", frozen=True)
    # The flags every service takes are the runner's; a service's own come from here.
    cli_flags: ClassVar[tuple[CliFlag, ...]] = ()
    cli_hidden: ClassVar[frozenset[str]] = frozenset()  # common flags accepted but not listed in --help
    cli_description: ClassVar[str] = ""  # --help's description; empty: "Strait <prog> service"

    config: Path = Field(description="MM2-format properties file")
    metrics_host: str = "127.0.0.1"
    metrics_port: int = Field(default=0, ge=0, le=65535, description="0 picks a free port")
    instance_id: str = Field(default_factory=default_instance_id)
    log_level: str = "INFO"
    flows: str = Field(default="", description="comma list of flows (A->B) this process serves; empty: all enabled")
