"""A producer application and a consumer application that move between clusters as a user's would in a disaster:
each runs in a thread for the whole test, counting what it wrote (acknowledged) and what it read, where."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaError, Producer

from shared.kafka.factories import confluent_consumer, confluent_producer

BURST = 150  # records per burst (over every partition)
BURST_PAUSE_S = 1.0


@dataclass(frozen=True)
class Read:
    """One record as the consumer application saw it."""

    cluster: str
    topic: str
    partition: int
    offset: int
    value: bytes


class ProducerApp:
    """Writes numbered values to `topic` in bursts; `move` sends it to another cluster; `hold` pauses it."""

    def __init__(self, cluster: str, props: Mapping[str, str], topic: str) -> None:
        self.topic = topic
        self.acked: dict[bytes, str] = {}  # value -> the cluster that acknowledged it
        self.failed: list[bytes] = []
        self._where = (cluster, dict(props))
        self._next = 0
        self._lock = threading.Lock()
        self._writing = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="producer-app", daemon=True)

    def start(self) -> ProducerApp:
        self._writing.set()
        self._thread.start()
        return self

    def hold(self) -> None:
        """Stop writing (what is in flight is flushed first)."""
        self._writing.clear()
        with self._lock:
            pass  # the burst under way has ended

    def move(self, cluster: str, props: Mapping[str, str]) -> None:
        """Write to `cluster` from now on (resumes writing)."""
        with self._lock:
            self._where = (cluster, dict(props))
        self._writing.set()

    def stop(self) -> None:
        self._stop.set()
        self._writing.set()
        self._thread.join(60)

    def _run(self) -> None:
        producer: Producer | None = None
        current: tuple[str, dict[str, str]] | None = None
        while not self._stop.is_set():
            self._writing.wait()
            if self._stop.is_set():
                break
            with self._lock:
                if current != self._where:
                    if producer is not None:
                        producer.flush(5)
                    current = self._where
                    producer = confluent_producer(
                        current[1], **{"enable.idempotence": True, "acks": "all", "message.timeout.ms": 10_000}
                    )
                assert producer is not None
                self._burst(producer, current[0])
            time.sleep(BURST_PAUSE_S)
        if producer is not None:
            producer.flush(5)

    def _burst(self, producer: Producer, cluster: str) -> None:
        def delivered(err: KafkaError | None, msg: object) -> None:
            value = msg.value()  # type: ignore[attr-defined]
            if err is None:
                self.acked[value] = cluster
            else:
                self.failed.append(value)

        for _ in range(BURST):
            value = f"v{self._next:07d}".encode()
            self._next += 1
            producer.produce(self.topic, value, key=value, on_delivery=delivered)
            producer.poll(0)
        producer.flush(15)


@dataclass
class ConsumerApp:
    """Reads `topics` on one cluster as `group`, committing after each batch; `stop` leaves (committing)."""

    cluster: str
    props: Mapping[str, str]
    group: str
    topics: Sequence[str]
    reads: list[Read] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._abandon = False
        self._thread = threading.Thread(target=self._run, name=f"consumer-{self.cluster}", daemon=True)

    def start(self) -> ConsumerApp:
        self._thread.start()
        return self

    def stop(self, *, cluster_gone: bool = False) -> None:
        """Leave the group; with `cluster_gone` nothing is committed or waited for (its brokers are dead)."""
        self._abandon = cluster_gone
        self._stop.set()
        self._thread.join(5 if cluster_gone else 60)

    def _run(self) -> None:
        consumer: Consumer = confluent_consumer(
            self.props,
            **{
                "group.id": self.group,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "isolation.level": "read_committed",
                "topic.metadata.refresh.interval.ms": 1000,
            },
        )
        consumer.subscribe(list(self.topics))
        try:
            while not self._stop.is_set():
                messages = consumer.consume(num_messages=500, timeout=0.3)
                got = [m for m in messages if m.error() is None]
                for m in got:
                    self.reads.append(
                        Read(self.cluster, m.topic() or "", m.partition() or 0, m.offset() or 0, m.value() or b"")
                    )
                if got:
                    with contextlib.suppress(Exception):  # a commit lost with a dying cluster is read again
                        consumer.commit(asynchronous=False)
        finally:
            if not self._abandon:
                consumer.close()
