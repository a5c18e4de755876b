"""An app over an index fed directly with MM2-format records (no broker), and an httpx client for it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from services.offset_translator.app import create_app
from services.offset_translator.index import TranslatorIndex
from services.offset_translator.settings import TranslatorSettings
from shared.config import MirrorMakerConfig, parse_mm2_config, parse_properties
from shared.kafka.follow import FollowedRecord
from shared.records import Checkpoint, Heartbeat, OffsetSync

# Unreachable bootstrap addresses: nothing here may talk to a broker.
CONFIG_TEXT = """
clusters=A,B,C
A.bootstrap.servers=127.0.0.1:1
B.bootstrap.servers=127.0.0.1:2
C.bootstrap.servers=127.0.0.1:3
A->B.enabled=true
"""
NOW_MS = 1_000_000
AB = ("A", "B")


def make_config(text: str = CONFIG_TEXT) -> MirrorMakerConfig:
    """A validated config from properties text."""
    return parse_mm2_config(parse_properties(text), env={})


def make_settings(**values: Any) -> TranslatorSettings:
    """Translator settings without a token unless given."""
    return TranslatorSettings(**{"config": Path("unused.properties"), "translator_token": None, **values})


class Feed:
    """Writes records into an index the way its topic followers would."""

    def __init__(self, index: TranslatorIndex) -> None:
        self.index = index
        self._offset = 0

    def _record(self, key: bytes | None, value: bytes | None, timestamp_ms: int) -> FollowedRecord:
        self._offset += 1
        return FollowedRecord(self._offset, key, value, timestamp_ms)

    def checkpoints(
        self, checkpoints: Iterable[Checkpoint], *, timestamp_ms: int = NOW_MS, flow: tuple[str, str] = AB
    ) -> None:
        """Checkpoint records on the flow's checkpoints topic."""
        records = [self._record(c.record_key(), c.record_value(), timestamp_ms) for c in checkpoints]
        self.index.on_checkpoint_records(flow, records)

    def syncs(self, syncs: Iterable[OffsetSync], *, flow: tuple[str, str] = AB) -> None:
        """Offset-sync records on the flow's offset-syncs topic."""
        self.index.on_sync_records(flow, [self._record(s.record_key(), s.record_value(), NOW_MS) for s in syncs])

    def heartbeat(self, heartbeat: Heartbeat, *, flow: tuple[str, str] = AB) -> None:
        """A record of the flow's mirrored heartbeats topic."""
        record = self._record(heartbeat.record_key(), heartbeat.record_value(), heartbeat.timestamp_ms)
        self.index.on_heartbeat_records(flow, [record])

    def raw(self, kind: str, key: bytes | None, value: bytes | None, *, flow: tuple[str, str] = AB) -> None:
        """An arbitrary record on one of the flow's topics ("checkpoints" or "syncs")."""
        record = self._record(key, value, NOW_MS)
        if kind == "checkpoints":
            self.index.on_checkpoint_records(flow, [record])
        else:
            self.index.on_sync_records(flow, [record])

    def loaded(self, flow: tuple[str, str] = AB) -> None:
        """Both topics of the flow were read to their end."""
        self.index.mark_checkpoints_loaded(flow)
        self.index.mark_syncs_loaded(flow)


def build_app(config_text: str = CONFIG_TEXT, **settings: Any) -> FastAPI:
    """An app that does not follow Kafka and answers with a fixed clock."""
    return create_app(make_settings(**settings), make_config(config_text), follow=False, clock=lambda: NOW_MS)


@pytest.fixture
def app() -> FastAPI:
    """The app without a token."""
    return build_app()


@pytest.fixture
def feed(app: FastAPI) -> Feed:
    """Writes into the app's index."""
    return Feed(app.state.index)


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client calling the app in-process."""
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as http:
        yield http
