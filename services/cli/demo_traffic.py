"""The demo's sample traffic: a few records per second with headers into each sample topic of the source, and a
consumer group reading them there (so checkpoint has positions to translate and the translator has answers)."""

from __future__ import annotations

import json
import random
import re
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from shared.config import FlowConfig
from shared.flow_context import FlowContext
from shared.kafka.factories import confluent_admin, confluent_consumer, confluent_producer
from shared.kafka.topics import create_topic

DEFAULT_TOPICS = ("orders", "payments", "clicks")
DEMO_GROUP = "strait-demo-consumer"
_LITERAL_TOPIC = re.compile(r"[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*")


def sample_topics(flow: FlowConfig) -> tuple[str, ...]:
    """The flow's `topics` entries that name one topic (not a pattern), else the default names it replicates."""
    rule = FlowContext.of(flow).topics
    literal = tuple(topic for topic in flow.settings.topics if _LITERAL_TOPIC.fullmatch(topic))
    return tuple(topic for topic in literal or DEFAULT_TOPICS if rule.should_replicate(topic)) or DEFAULT_TOPICS


def create_sample_topics(props: Mapping[str, str], topics: Sequence[str], partitions: int = 3) -> None:
    """Create the sample topics on the source (one replica each: the demo's clusters have one broker)."""
    admin = confluent_admin(props)
    for topic in topics:
        create_topic(admin, topic, partitions=partitions, replication_factor=1)


def sample_record(topic: str, seq: int) -> tuple[bytes, bytes, list[tuple[str, str | bytes]]]:
    """Key, JSON value and headers of the `seq`-th record of `topic`."""
    key = f"{topic}-key-{seq % 12}"
    value: dict[str, Any] = {"topic": topic, "seq": seq, "ts_ms": int(time.time() * 1000)}
    value["amount"] = round(random.uniform(1, 500), 2)
    headers: list[tuple[str, str | bytes]] = [
        ("source", b"strait-demo"),
        ("seq", str(seq).encode()),
        ("trace-id", uuid.uuid4().hex.encode()),
        ("content-type", b"application/json"),
    ]
    return key.encode(), json.dumps(value).encode(), headers


class SampleProducer(threading.Thread):
    """Writes `rate_per_s` records per second into each topic until `stop()`; counts what the broker acknowledged."""

    def __init__(self, props: Mapping[str, str], topics: Sequence[str], rate_per_s: float) -> None:
        super().__init__(name="demo-producer", daemon=True)
        self._props = dict(props)
        self.topics = tuple(topics)
        self._interval_s = 1 / rate_per_s
        self._stop_event = threading.Event()
        self.acked: dict[str, int] = dict.fromkeys(self.topics, 0)
        self.last_error: str | None = None

    def run(self) -> None:
        """Produce until stopped, then deliver what is queued."""
        producer = confluent_producer(self._props, **{"enable.idempotence": True, "linger.ms": 5})

        def delivered(error: Any, message: Any) -> None:
            if error is None:
                self.acked[message.topic()] += 1
            else:
                self.last_error = str(error)

        seq = 0
        while not self._stop_event.is_set():
            for topic in self.topics:
                key, value, headers = sample_record(topic, seq)
                try:
                    producer.produce(topic, value=value, key=key, headers=headers, on_delivery=delivered)
                except BufferError:
                    self.last_error = "local produce queue full"
            seq += 1
            producer.poll(0)
            self._stop_event.wait(self._interval_s)
        producer.flush(10)

    def stop(self) -> None:
        """Stop producing; returns once the queued records were delivered (bounded)."""
        self._stop_event.set()
        if self.is_alive():
            self.join(timeout=15)


class SampleConsumer(threading.Thread):
    """The consumer group DEMO_GROUP reading the sample topics on the source and committing as it goes."""

    def __init__(self, props: Mapping[str, str], topics: Sequence[str]) -> None:
        super().__init__(name="demo-consumer", daemon=True)
        self._props = dict(props)
        self.topics = list(topics)
        self._stop_event = threading.Event()
        self.consumed = 0

    def run(self) -> None:
        """Consume until stopped, then leave the group."""
        consumer = confluent_consumer(
            self._props,
            **{
                "group.id": DEMO_GROUP,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": True,
                "auto.commit.interval.ms": 1000,
            },
        )
        try:
            consumer.subscribe(self.topics)
            while not self._stop_event.is_set():
                for message in consumer.consume(num_messages=500, timeout=0.5):
                    if message.error() is None:
                        self.consumed += 1
        finally:
            consumer.close()

    def stop(self) -> None:
        """Stop consuming and commit the final positions (bounded)."""
        self._stop_event.set()
        if self.is_alive():
            self.join(timeout=15)
