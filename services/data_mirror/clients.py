"""Kafka clients a Spark Python worker keeps between epochs (connecting costs more than an epoch's work)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from shared.kafka.factories import confluent_admin, confluent_consumer, confluent_producer

_cache: dict[str, Any] = {}


def _key(kind: str, props: dict[str, str], extra: dict[str, Any]) -> str:
    printable = {k: v for k, v in extra.items() if not callable(v)}
    return kind + json.dumps([sorted(props.items()), sorted(printable.items())], default=str)


def cached_consumer(props: dict[str, str], group_id: str) -> Consumer:
    """A byte-array consumer used only with assign(): no group membership, no commits."""
    extra = {"group.id": group_id, "enable.auto.commit": False, "enable.partition.eof": False}
    key = _key("consumer", props, extra)
    if key not in _cache:
        _cache[key] = confluent_consumer(props, **extra)
    consumer: Consumer = _cache[key]
    return consumer


def cached_producer(
    props: dict[str, str], on_delivery: Callable[..., None], transactional_id: str | None = None
) -> Producer:
    """An idempotent producer (transactional when `transactional_id` is given), initialised once."""
    extra = _producer_settings(on_delivery, transactional_id)
    key = _key("producer", props, extra)
    if key not in _cache:
        producer = confluent_producer(props, **extra)
        if transactional_id:
            producer.init_transactions(60)
        _cache[key] = producer
    cached: Producer = _cache[key]
    return cached


def cached_admin(props: dict[str, str]) -> AdminClient:
    """An admin client for offset look-ups."""
    key = _key("admin", props, {})
    if key not in _cache:
        _cache[key] = confluent_admin(props)
    admin: AdminClient = _cache[key]
    return admin


def forget_admin(props: dict[str, str]) -> None:
    """Drop the admin client, so the next use makes one with fresh metadata (new or deleted partitions)."""
    _cache.pop(_key("admin", props, {}), None)


def forget_producer(props: dict[str, str], on_delivery: Callable[..., None], transactional_id: str | None) -> None:
    """Drop a producer that was fenced or hit a fatal error, so the next use makes a fresh one."""
    extra = _producer_settings(on_delivery, transactional_id)
    _cache.pop(_key("producer", props, extra), None)


def _producer_settings(on_delivery: Callable[..., None], transactional_id: str | None) -> dict[str, Any]:
    """Idempotent, acks=all, and never creating a missing remote topic (the broker's default would have 1 partition)."""
    extra: dict[str, Any] = {
        "enable.idempotence": True,
        "acks": "all",
        "allow.auto.create.topics": False,
        "on_delivery": on_delivery,
    }
    if transactional_id:
        extra["transactional.id"] = transactional_id
    return extra
