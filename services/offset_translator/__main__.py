"""Entry point of `strait-offset-translator`: settings, config, JSON logs, then the HTTP server until SIGTERM."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence

from pydantic import ValidationError

from services.offset_translator.app import create_app
from services.offset_translator.server import serve
from services.offset_translator.settings import TranslatorSettings
from shared.errors import ConfigError
from shared.metrics_registry import service_registry
from shared.native_output import relay_native_stderr
from shared.observability import configure_logging, register_secrets
from shared.runner import fail, load_config

PROG = "strait-offset-translator"


def parse_settings(argv: Sequence[str] | None) -> TranslatorSettings:
    """Flags over STRAIT_* environment variables over defaults; one line on bad input."""
    parser = argparse.ArgumentParser(prog=PROG, description="Strait offset translator (HTTP API)")
    parser.add_argument("--config", help="MM2-format properties file (env STRAIT_CONFIG)")
    parser.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port for the API, /metrics, /health, /ready (default 8080)")
    # Accepted like every Strait service's, but /metrics is served on --port with the API.
    parser.add_argument("--metrics-host", help=argparse.SUPPRESS)
    parser.add_argument("--metrics-port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--instance-id", help="this process's name in status records")
    parser.add_argument("--log-level", help="DEBUG, INFO, WARNING, ERROR")
    parser.add_argument("--flows", help="comma list of flows to serve, e.g. A->B (default: all enabled)")
    parser.add_argument(
        "--token-file", dest="translator_token_file", metavar="FILE", help="file holding the bearer token"
    )
    parser.add_argument("--protected-endpoints", help="endpoint families that need the token besides failover")
    parser.add_argument("--tls-cert-file", help="PEM certificate chain: serve HTTPS (env STRAIT_TLS_CERT_FILE)")
    parser.add_argument("--tls-key-file", help="PEM private key of the certificate, if not in its file")
    args = parser.parse_args(argv)
    given = {key: value for key, value in vars(args).items() if value is not None}
    try:
        return TranslatorSettings(**given)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        message = first["msg"].removeprefix("Value error, ")
        hint = " (use --config or STRAIT_CONFIG)" if where == "config" else ""
        fail(PROG, f"setting {where}: {message}{hint}" if where else message)


def main(argv: Sequence[str] | None = None) -> None:
    """Run the translator until SIGTERM; exit 2 on bad settings or config, 1 if it crashed."""
    settings = parse_settings(argv)
    configure_logging(PROG, settings.log_level)
    relay_native_stderr()
    config = load_config(PROG, settings)
    try:
        app = create_app(settings, config, registry=service_registry(PROG))
        token = settings.token()
    except ConfigError as exc:
        fail(PROG, str(exc))
    if token:
        register_secrets([token])
    raise SystemExit(asyncio.run(serve(app, settings, PROG)))


if __name__ == "__main__":
    main()
