"""Entry point of `strait-offset-translator`: the common runner around the HTTP server."""

from __future__ import annotations

from collections.abc import Sequence

from prometheus_client import CollectorRegistry

from services.offset_translator.app import create_app
from services.offset_translator.server import TranslatorServer
from services.offset_translator.settings import TranslatorSettings
from shared.config import MirrorMakerConfig
from shared.observability import register_secrets
from shared.runner import run_service

PROG = "strait-offset-translator"


def build(settings: TranslatorSettings, config: MirrorMakerConfig, registry: CollectorRegistry) -> TranslatorServer:
    """The app for the served flows, behind its server; the token is masked in every log line."""
    app = create_app(settings, config, registry=registry)
    if token := settings.token():
        register_secrets([token])
    return TranslatorServer(app, settings)


def main(argv: Sequence[str] | None = None) -> None:
    """Run the translator until SIGTERM; exit 2 on bad settings or config, 1 if it crashed."""
    run_service(PROG, build, TranslatorSettings, argv)


if __name__ == "__main__":
    main()
