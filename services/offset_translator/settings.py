"""Process settings of the offset translator: where it listens, its bearer token and what the token protects."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr, field_validator

from shared.config.service_settings import ServiceSettings

# Names of the endpoint families an operator may protect (`protected_endpoints`); `failover` always is.
ENDPOINTS = ("flows", "offsets", "translate", "topology", "status", "metrics", "failover")


class TranslatorSettings(ServiceSettings):
    """Flags over STRAIT_* environment variables over defaults.

    The API, /metrics, /health and /ready are all served on `host`:`port` (`metrics_host`/`metrics_port`
    are not used). The token comes from STRAIT_TRANSLATOR_TOKEN or the file STRAIT_TRANSLATOR_TOKEN_FILE.
    """

    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=0, le=65535, description="0 picks a free port")
    metrics_port: int = Field(default=8080, ge=0, le=65535, description="unused: /metrics is served on `port`")
    translator_token: SecretStr | None = Field(default=None, description="bearer token (env STRAIT_TRANSLATOR_TOKEN)")
    translator_token_file: Path | None = Field(default=None, description="file whose first line is the token")
    protected_endpoints: str = Field(
        default="",
        description=f"comma list of endpoint families that need the token besides failover: {', '.join(ENDPOINTS)} "
        "or 'all'",
    )
    status_stale_after_s: float = Field(default=30.0, gt=0)
    status_interval_s: float = Field(default=5.0, gt=0, description="how often the translator reports its own status")
    topology_refresh_s: float = Field(default=10.0, gt=0, description="how often topic names are listed per cluster")
    failover_timeout_s: float = Field(default=30.0, gt=0, description="deadline of each admin call of a failover")

    @field_validator("protected_endpoints")
    @classmethod
    def _known_endpoints(cls, value: str) -> str:
        names = {name.strip() for name in value.split(",") if name.strip()}
        unknown = sorted(names - {*ENDPOINTS, "all"})
        if unknown:
            raise ValueError(f"unknown endpoint {unknown[0]!r}; expected {', '.join(ENDPOINTS)} or 'all'")
        return ",".join(sorted(names))

    def token(self) -> str | None:
        """The bearer token: STRAIT_TRANSLATOR_TOKEN, else the first line of the token file, else None."""
        if self.translator_token is not None and self.translator_token.get_secret_value():
            return self.translator_token.get_secret_value()
        if self.translator_token_file is not None:
            lines = self.translator_token_file.read_text().splitlines()
            token = lines[0].strip() if lines else ""
            return token or None
        return None

    def protected(self) -> frozenset[str]:
        """Endpoint families that need the token (empty without a token); failover is always among them."""
        names = {name for name in self.protected_endpoints.split(",") if name}
        if "all" in names:
            names = set(ENDPOINTS)
        return frozenset({*names, "failover"})
