"""Process settings of the offset translator: where it listens, its bearer token and what the token protects."""

from __future__ import annotations

import re
import ssl
from pathlib import Path
from typing import ClassVar

from pydantic import Field, SecretStr, field_validator, model_validator

from shared.config.service_settings import CliFlag, ServiceSettings
from shared.errors import ConfigError

# Names of the endpoint families an operator may protect (`protected_endpoints`); `failover` and `dr` always are.
ENDPOINTS = ("flows", "offsets", "translate", "topology", "status", "rpo", "metrics", "failover", "dr")
# A token shorter than this, or one that a template or an example ships, guards nothing: the translator refuses it.
MIN_TOKEN_CHARS = 16
_PLACEHOLDER_MARKS = ("changeme", "replaceme", "placeholder")


class TranslatorSettings(ServiceSettings):
    """Flags over STRAIT_* environment variables over defaults.

    The API, /metrics, /health and /ready are all served on `host`:`port` (`metrics_host`/`metrics_port`
    are not used). The token comes from STRAIT_TRANSLATOR_TOKEN or the file STRAIT_TRANSLATOR_TOKEN_FILE.
    """

    cli_description: ClassVar[str] = "offset translator (HTTP API)"
    cli_hidden: ClassVar[frozenset[str]] = frozenset({"--metrics-host", "--metrics-port"})  # served on --port
    cli_flags: ClassVar[tuple[CliFlag, ...]] = (
        CliFlag("--host", "address to listen on (default 127.0.0.1)"),
        CliFlag("--port", "port for the API, /metrics, /health, /ready (default 8080)", type=int),
        CliFlag("--token-file", "file holding the bearer token", dest="translator_token_file"),
        CliFlag("--protected-endpoints", "endpoint families that need the token besides failover"),
        CliFlag("--tls-cert-file", "PEM certificate chain: serve HTTPS (env STRAIT_TLS_CERT_FILE)"),
        CliFlag("--tls-key-file", "PEM private key of the certificate, if not in its file"),
    )

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
    allowed_hosts: str = Field(
        default="",
        description="comma list of host names a loopback translator also answers to (one a port-forward or proxy "
        "sends); other names are refused, as a re-pointed DNS name would send them",
    )
    max_requests: int = Field(
        default=100,
        ge=1,
        description="requests served at once; more are answered 503 (the probes and /metrics always are answered; "
        "idle connections count for nothing)",
    )
    status_stale_after_s: float = Field(default=30.0, gt=0)
    status_interval_s: float = Field(default=5.0, gt=0, description="how often the translator reports its own status")
    topology_refresh_s: float = Field(default=10.0, gt=0, description="how often topic names are listed per cluster")
    feed_stale_after_s: float = Field(
        default=10.0,
        gt=0,
        description="the cockpit calls a target's data stale when the translator's fetches there went unanswered this "
        "long (a follower fetches every half second, records or none)",
    )
    history_interval_s: float = Field(
        default=10.0, ge=0.5, description="how often the cockpit's chart samples each flow (the last hour is kept)"
    )
    failover_timeout_s: float = Field(default=30.0, gt=0, description="deadline of each admin call of a failover")
    dr_max_wait_s: float = Field(
        default=600.0,
        gt=0,
        description="the longest a disaster-recovery action over HTTP waits for a drain, whatever its timeout_s asks "
        "(a request that long holds a worker thread; the CLI has no such bound)",
    )
    tls_cert_file: Path | None = Field(
        default=None, description="PEM certificate chain: serve HTTPS (its key in the same file or in tls_key_file)"
    )
    tls_key_file: Path | None = Field(default=None, description="PEM private key of tls_cert_file, if not in it")

    @field_validator("tls_cert_file", "tls_key_file")
    @classmethod
    def _tls_file_exists(cls, path: Path | None) -> Path | None:
        if path is not None and not path.is_file():
            raise ValueError(f"{path}: no such file")
        return path

    @model_validator(mode="after")
    def _tls_loads(self) -> TranslatorSettings:
        """A certificate and key that do not load stop the start with the file named (not a traceback later)."""
        if self.tls_cert_file is None:
            if self.tls_key_file is not None:
                raise ValueError("tls_key_file is set without tls_cert_file")
            return self
        try:
            self.tls_context()
        except (ssl.SSLError, ValueError) as exc:
            raise ValueError(f"{self.tls_cert_file}: not a PEM certificate chain with its key ({exc})") from exc
        return self

    def tls_context(self) -> ssl.SSLContext | None:
        """The server's TLS context (TLS 1.2 or newer), or None without a certificate."""
        if self.tls_cert_file is None:
            return None
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(self.tls_cert_file, self.tls_key_file)
        return context

    @field_validator("protected_endpoints")
    @classmethod
    def _known_endpoints(cls, value: str) -> str:
        names = {name.strip() for name in value.split(",") if name.strip()}
        unknown = sorted(names - {*ENDPOINTS, "all"})
        if unknown:
            raise ValueError(f"unknown endpoint {unknown[0]!r}; expected {', '.join(ENDPOINTS)} or 'all'")
        return ",".join(sorted(names))

    def token(self) -> str | None:
        """The bearer token: STRAIT_TRANSLATOR_TOKEN, else the first line of the token file, else None.

        ConfigError for a token that guards nothing (`weak_token`) and for a token file that holds none: whoever
        names a file means the translator to have a token. OSError when the file cannot be read.
        """
        if self.translator_token is not None and self.translator_token.get_secret_value():
            token = self.translator_token.get_secret_value()
            _refuse_weak(token, key="translator_token", source="STRAIT_TRANSLATOR_TOKEN")
            return token
        if self.translator_token_file is not None:
            lines = self.translator_token_file.read_text().splitlines()
            token = lines[0].strip() if lines else ""
            source = f"the token file {self.translator_token_file}"
            if not token:
                raise ConfigError(
                    f"translator_token_file {self.translator_token_file}: its first line is empty; write a token "
                    "there (e.g. `openssl rand -base64 32`) or unset STRAIT_TRANSLATOR_TOKEN_FILE",
                    key="translator_token_file",
                    value=str(self.translator_token_file),
                )
            _refuse_weak(token, key="translator_token_file", source=source, value=str(self.translator_token_file))
            return token
        return None

    def protected(self) -> frozenset[str]:
        """Endpoint families that need the token (empty without a token); failover and dr always are among them."""
        names = {name for name in self.protected_endpoints.split(",") if name}
        if "all" in names:
            names = set(ENDPOINTS)
        return frozenset({*names, "failover", "dr"})


def weak_token(token: str) -> str | None:
    """Why `token` cannot guard the translator, or None: a known placeholder (`change-me-token`, anything with
    change-me, replace-me or placeholder in it, however written) or shorter than MIN_TOKEN_CHARS characters."""
    squashed = re.sub(r"[\s_.-]", "", token.lower())
    for mark in _PLACEHOLDER_MARKS:
        if mark in squashed:
            return f"is a placeholder (it contains '{mark}')"
    if len(token) < MIN_TOKEN_CHARS:
        return f"has {len(token)} characters, fewer than {MIN_TOKEN_CHARS}"
    return None


def _refuse_weak(token: str, *, key: str, source: str, value: str | None = None) -> None:
    """ConfigError naming where a weak token came from and why it is refused (never the token itself)."""
    why = weak_token(token)
    if why is not None:
        raise ConfigError(
            f"{key}: the translator's bearer token from {source} {why}; the translator refuses to start with it. "
            "Generate one (e.g. `openssl rand -base64 32`)",
            key=key,
            value=value,
        )
