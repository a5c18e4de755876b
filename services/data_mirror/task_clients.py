"""The Kafka clients one copy task owns for its whole life, built on the executor and closed when it ends.

Nothing is cached between tasks: a task makes its own producer, so a transactional id is only ever live in
one task at a time (a new task of the slot fences the previous one when it initialises transactions).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from services.data_mirror.work import TaskSpec
from shared.control import MirrorHandover, decode_event
from shared.control.topic_names import CONTROL_READER_GROUP, mirror_source_group
from shared.kafka.batch_link import BatchLink, open_batch_link
from shared.kafka.batch_producer import INIT_TIMEOUT_S
from shared.kafka.client_names import client_id
from shared.kafka.error_classes import ErrorClass, client_error_class, kafka_error_of
from shared.kafka.factories import confluent_admin, confluent_consumer, confluent_producer
from shared.kafka.leader_epochs import epoch_ends
from shared.kafka.topic_admin import TopicAdmin
from shared.partition_key import PartitionKey
from shared.progress_store import load_progress
from shared.records.progress import Progress

LOOKUP_TIMEOUT_S = 15

Bounds = tuple[dict[PartitionKey, int], dict[PartitionKey, int]]


async def _no_batch_link() -> BatchLink:
    raise RuntimeError("these clients cannot forward batches")


@dataclass
class TaskClients:
    """What a copy task talks to; injected, so the task's logic runs in unit tests without brokers."""

    consumer: Any  # the record path's (None when the task forwards batches)
    producer: Any
    sync_producer: Any | None
    load_progress: Callable[[], dict[tuple[str, int], Progress]]
    offset_bounds: Callable[[list[tuple[str, int]]], Bounds]
    handover_requested: Callable[[], bool]
    close: Callable[[], None]
    open_batch_link: Callable[[], Awaitable[BatchLink]] = _no_batch_link
    # where each source leader says a committed leader epoch ends now (KIP-320; -1: the leader does not know the
    # epoch, as injected clients answer; a partition left out was not answered)
    epoch_ends: Callable[[dict[PartitionKey, int]], dict[PartitionKey, int]] = lambda epochs: {
        key: -1 for key in epochs
    }
    # each source topic's id now (a topic made again has a new one)
    source_topic_ids: Callable[[list[str]], dict[str, str]] = lambda _topics: {}


def task_name(spec: TaskSpec) -> str:
    """What the task's Kafka clients are for, in their client ids (`client_names`), as MM2 names its task's."""
    return f"{spec.flow}|task-{spec.slot}"


def _named(spec: TaskSpec, role: str, what: str | None = None) -> dict[str, str]:
    """librdkafka's `client.id` for one of the task's clients (the user's, if set, wins in the factory)."""
    return {"client.id": client_id(role, task_name(spec), what)}


def connect(spec: TaskSpec) -> TaskClients:
    """Real clients for `spec`. Exactly-once: transactions are initialised (fencing) before progress is read.

    A batch-forwarding task gets no record consumer or producer: its copier opens its own protocol clients
    (`open_batch_link`), which write its progress too."""
    producer, consumer = (None, None) if spec.copy_batches else _record_clients(spec)
    sync_producer = None
    if spec.emit_offset_syncs:
        sync_producer = confluent_producer(
            spec.sync_producer, **_producer_settings(None), **_named(spec, "producer", "offset-syncs")
        )
    watch = HandoverWatch(spec)
    admin = confluent_admin(spec.source_admin, **_named(spec, "admin"))

    def close() -> None:
        watch.close()
        if consumer is not None:
            consumer.close()
        for client in (producer, sync_producer):
            if client is not None:
                client.flush(5)

    return TaskClients(
        consumer=consumer,
        producer=producer,
        sync_producer=sync_producer,
        load_progress=lambda: load_progress(spec.target_consumer, spec.progress_topic, spec.flow),
        offset_bounds=lambda keys: offset_bounds(admin, keys),
        handover_requested=watch.requested,
        close=close,
        epoch_ends=lambda epochs: _epoch_ends(spec.source_consumer, epochs),
        source_topic_ids=lambda topics: TopicAdmin("source", spec.source_admin, timeout_s=LOOKUP_TIMEOUT_S).topic_ids(
            topics
        ),
        open_batch_link=lambda: open_batch_link(
            spec.source_consumer,
            spec.target_producer,
            sorted({work.source_topic for work in spec.partitions}),
            sorted({work.remote_topic for work in spec.partitions} | {spec.progress_topic}),
            purpose=task_name(spec),
            transactional_id=spec.transactional_id,
        ),
    )


def _record_clients(spec: TaskSpec) -> tuple[Any, Any]:
    """The record path's producer (its transactions initialised: any earlier task of the slot is fenced) and
    consumer."""
    producer = confluent_producer(
        spec.target_producer, **_producer_settings(spec.transactional_id), **_named(spec, "producer")
    )
    if spec.transactional_id:
        producer.init_transactions(INIT_TIMEOUT_S)
    consumer = confluent_consumer(
        spec.source_consumer,
        **_named(spec, "consumer"),
        **{
            "group.id": mirror_source_group(spec.flow),
            "enable.auto.commit": False,
            "enable.partition.eof": False,
            "check.crcs": True,  # a corrupt source batch stops its partition instead of being copied
            "auto.offset.reset": "error",  # the task resets itself, counting every record skipped (record_copy)
        },
    )
    return producer, consumer


def _epoch_ends(props: dict[str, str], epochs: dict[PartitionKey, int]) -> dict[PartitionKey, int]:
    """`leader_epochs.epoch_ends`, bounded in time and blocking (nothing asked: no I/O).

    Asked from inside the task's event loop (the record copier, after an out-of-range error), it runs on a
    thread of its own: the record copier's step blocks anyway, and a loop cannot run a second one in itself."""
    if not epochs:
        return {}
    asked = asyncio.wait_for(epoch_ends(props, epochs), LOOKUP_TIMEOUT_S)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(asked)
    with ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, asked).result()


def _producer_settings(transactional_id: str | None) -> dict[str, Any]:
    """Idempotent, acks=all, and never creating a missing remote topic (the broker's default would have 1 partition)."""
    extra: dict[str, Any] = {"enable.idempotence": True, "acks": "all", "allow.auto.create.topics": False}
    if transactional_id:
        extra["transactional.id"] = transactional_id
    return extra


class HandoverWatch:
    """Reads the control topic from the offset the driver gave, for a hand-over request naming this task."""

    def __init__(self, spec: TaskSpec) -> None:
        self._spec = spec
        self._consumer: Consumer = confluent_consumer(
            spec.target_consumer,
            **_named(spec, "consumer", "control"),
            **{"group.id": CONTROL_READER_GROUP, "enable.auto.commit": False},
        )
        self._consumer.assign([TopicPartition(spec.control_topic, 0, spec.control_from_offset)])

    def requested(self) -> bool:
        """True once the driver asked this (flow, slot, generation) to commit and return (non-blocking)."""
        spec = self._spec
        for message in self._consumer.consume(num_messages=500, timeout=0):
            if message.error() or message.value() is None:
                continue
            event = decode_event(message.value(), topic=message.topic(), offset=message.offset())
            if not isinstance(event, MirrorHandover) or event.flow != spec.flow:
                continue
            if event.names(spec.slot, spec.generation):
                return True
        return False

    def close(self) -> None:
        """Leave without committing anything (the consumer has no group offsets)."""
        with contextlib.suppress(KafkaException, RuntimeError):
            self._consumer.close()


def offset_bounds(admin: AdminClient, keys: list[PartitionKey]) -> Bounds:
    """(earliest, latest) offsets; partitions of topics that no longer exist or without a leader now are left out
    (the task holds them and asks again), other failures raise.

    The admin client finds leaders in its cached metadata, which librdkafka refreshes only every
    topic.metadata.refresh.interval.ms (5 min): when it knew no leader for a partition asked, or a leader it knew
    answered that it leads no more (an election while it was away), the topics' metadata is read again, so the
    partition is found at the next look, not minutes later."""
    tps = [TopicPartition(topic, partition) for topic, partition in keys]
    try:
        bounds = _list_offsets(admin, tps, OffsetSpec.earliest()), _list_offsets(admin, tps, OffsetSpec.latest())
    except KafkaException as exc:
        error = kafka_error_of(exc)
        if error is not None and error.code() == KafkaError._NOENT:  # "No leaders found" in the cached metadata
            _read_metadata(admin, keys)
        raise
    if left_out := [key for key in keys if key not in bounds[0] or key not in bounds[1]]:
        _read_metadata(admin, left_out)
    return bounds


def _read_metadata(admin: AdminClient, keys: list[PartitionKey]) -> None:
    """Read the topics' metadata again, which the admin client's next look-ups take leaders from."""
    for topic in sorted({topic for topic, _ in keys}):
        with contextlib.suppress(KafkaException):
            admin.list_topics(topic, timeout=LOOKUP_TIMEOUT_S)


def _list_offsets(admin: Any, tps: list[TopicPartition], spec: OffsetSpec) -> dict[PartitionKey, int]:
    if not tps:
        return {}
    futures = admin.list_offsets({tp: spec for tp in tps}, request_timeout=LOOKUP_TIMEOUT_S)
    found: dict[PartitionKey, int] = {}
    for tp, future in futures.items():
        try:
            found[(tp.topic, tp.partition)] = int(future.result(timeout=LOOKUP_TIMEOUT_S).offset)
        except KafkaException as exc:
            error = kafka_error_of(exc)
            if error is None or client_error_class(error) not in (ErrorClass.TOPIC_GONE, ErrorClass.RETRY):
                raise  # a partition without a leader now (RETRY) is left out too: its task holds it and asks again
    return found
