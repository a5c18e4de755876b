"""Build confluent-kafka and aiokafka clients from Java-style client properties."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.client import AIOKafkaClient
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from shared.kafka.client_logs import client_log_level
from shared.kafka.client_names import client_id
from shared.kafka.client_props import (
    AIOKAFKA_CONSUMER_ONLY,
    AIOKAFKA_PRODUCER_ONLY,
    LIBRDKAFKA_CONSUMER_ONLY,
    LIBRDKAFKA_PRODUCER_ONLY,
    ClientProps,
    to_aiokafka,
    to_librdkafka,
)
from shared.kafka.no_auto_create import LIBRDKAFKA_NO_AUTO_CREATE

# Services hold these clients as values; they name the types from here, not from the client libraries.
__all__ = [
    "AdminClient",
    "aio_admin",
    "aio_client",
    "aio_consumer",
    "aio_producer",
    "aiokafka_kwargs",
    "confluent_admin",
    "confluent_consumer",
    "confluent_producer",
    "librdkafka_config",
]

_log = structlog.get_logger(__name__)
_warned: set[tuple[str, tuple[str, ...]]] = set()


def _warn_ignored(role: str, translated: ClientProps) -> None:
    """Say once per role which user settings the client cannot honour."""
    if translated.ignored and (role, translated.ignored) not in _warned:
        _warned.add((role, translated.ignored))
        _log.warning("client_settings_ignored", client=role, settings=list(translated.ignored))


def librdkafka_config(props: Mapping[str, str], role: str, **extra: Any) -> dict[str, Any]:
    """librdkafka configuration for `role`, with `extra` (already librdkafka names) on top; never auto-creating.
    Its `client.id`: the user's if set, else `extra`'s (a caller naming what the client is for), else the
    process's and the role's (`client_names`)."""
    translated = to_librdkafka(props)
    _warn_ignored(role, translated)
    other_kind = LIBRDKAFKA_PRODUCER_ONLY if role == "consumer" else LIBRDKAFKA_CONSUMER_ONLY
    settings = {key: value for key, value in translated.settings.items() if key not in other_kind}
    named = settings.get("client.id") or extra.get("client.id") or client_id(role)
    level = client_log_level()
    quiet = {"log_level": level} if level is not None else {}
    return {**quiet, **settings, **extra, "client.id": named, **LIBRDKAFKA_NO_AUTO_CREATE}


def confluent_admin(props: Mapping[str, str], **extra: Any) -> AdminClient:
    """A confluent-kafka AdminClient."""
    return AdminClient(librdkafka_config(props, "admin", **extra))


def confluent_producer(props: Mapping[str, str], **extra: Any) -> Producer:
    """A confluent-kafka Producer (byte keys and values)."""
    return Producer(librdkafka_config(props, "producer", **extra))


def confluent_consumer(props: Mapping[str, str], **extra: Any) -> Consumer:
    """A confluent-kafka Consumer (byte keys and values)."""
    return Consumer(librdkafka_config(props, "consumer", **extra))


def aiokafka_kwargs(props: Mapping[str, str], role: str, **extra: Any) -> dict[str, Any]:
    """aiokafka keyword arguments for `role` (consumer, producer, admin or client), `extra` on top. Its
    `client_id`: the user's `client.id` if set, else `extra`'s, else the process's and the role's (`client_names`)."""
    translated = to_aiokafka(props)
    _warn_ignored(role, translated)
    kwargs = dict(translated.settings)
    if role != "consumer":
        kwargs = {k: v for k, v in kwargs.items() if k not in AIOKAFKA_CONSUMER_ONLY}
    if role != "producer":
        kwargs = {k: v for k, v in kwargs.items() if k not in AIOKAFKA_PRODUCER_ONLY}
    named = kwargs.get("client_id") or extra.get("client_id") or client_id(role)
    return {**kwargs, **extra, "client_id": named}


def aio_producer(props: Mapping[str, str], **extra: Any) -> AIOKafkaProducer:
    """An aiokafka producer; call `await start()`."""
    return AIOKafkaProducer(**aiokafka_kwargs(props, "producer", **extra))


def aio_consumer(props: Mapping[str, str], *topics: str, **extra: Any) -> AIOKafkaConsumer:
    """An aiokafka consumer subscribed to `topics` (none: assign partitions); call `await start()`."""
    return AIOKafkaConsumer(*topics, **aiokafka_kwargs(props, "consumer", **extra))


def aio_admin(props: Mapping[str, str], **extra: Any) -> AIOKafkaAdminClient:
    """An aiokafka admin client; call `await start()`."""
    return AIOKafkaAdminClient(**aiokafka_kwargs(props, "admin", **extra))


def aio_client(props: Mapping[str, str], **extra: Any) -> AIOKafkaClient:
    """A bare aiokafka protocol client (for requests no admin API exposes as-is); call `await bootstrap()`."""
    return AIOKafkaClient(**aiokafka_kwargs(props, "client", **extra))
