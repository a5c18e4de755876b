"""A steady producer (idempotent, acks=all) writing unique `<topic>:<partition>:<seq>` values, and its ledger."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from shared.kafka.factories import confluent_producer
from shared.partition_key import PartitionKey


def encode(topic: str, partition: int, seq: int) -> bytes:
    """The record value: unique over the whole run."""
    return f"{topic}:{partition}:{seq}".encode()


def decode_seq(value: bytes | None) -> int | None:
    """The sequence number in a value written by `encode` (None for anything else)."""
    if not value:
        return None
    try:
        return int(value.rsplit(b":", 1)[1])
    except (IndexError, ValueError):
        return None


class AckLedger:
    """Which sequence numbers of each topic-partition the source acknowledged (one byte per record)."""

    def __init__(self) -> None:
        self._acked: dict[PartitionKey, bytearray] = {}
        self.count = 0

    def mark(self, slot: PartitionKey, seq: int) -> None:
        """Record one acknowledgement."""
        bits = self._acked.setdefault(slot, bytearray())
        if seq >= len(bits):
            bits.extend(bytes(seq + 1 - len(bits) + 4096))
        if not bits[seq]:
            bits[seq] = 1
            self.count += 1

    def missing_from(self, slot: PartitionKey, seen: bytearray) -> int:
        """How many acknowledged sequence numbers of `slot` are not marked in `seen`."""
        acked = self._acked.get(slot, bytearray())
        return sum(1 for seq, flag in enumerate(acked) if flag and (seq >= len(seen) or not seen[seq]))


class SteadyProducer:
    """Writes `rate` records/s round-robin over every topic-partition from a thread, until stopped.

    A client that was stalled (every broker of a partition restarting) does not burst afterwards: the schedule
    never runs more than a second behind. A delivery that fails after the client's retries is counted in
    `failed`; a fatal idempotence error replaces the client (reported through `on_note`).
    """

    def __init__(
        self,
        props: Mapping[str, str],
        topics: list[str],
        partitions: int,
        rate: int,
        on_note: Callable[[str, str], object],
    ) -> None:
        self._props = dict(props)
        self._slots: list[PartitionKey] = [(topic, p) for topic in topics for p in range(partitions)]
        self._next_seq: dict[PartitionKey, int] = dict.fromkeys(self._slots, 0)
        self._rate = rate
        self._on_note = on_note
        self._producer = self._new_client()
        self._fatal: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="soak-producer", daemon=True)
        self.ledger = AckLedger()
        self.sent = 0
        self.failed = 0
        self.failure_kinds: Counter[str] = Counter()
        self.unacknowledged = 0
        self.clients = 1

    def _new_client(self) -> Producer:
        return confluent_producer(self._props, **{"enable.idempotence": True, "acks": "all", "linger.ms": 5})

    def _on_delivery(self, err: KafkaError | None, msg: Message) -> None:
        if err is None:
            seq = decode_seq(msg.value())
            if seq is not None:
                self.ledger.mark((msg.topic() or "", msg.partition() or 0), seq)
            return
        self.failed += 1
        self.failure_kinds[err.name()] += 1
        if err.fatal():
            self._fatal = f"{err.name()}: {err.str()}"

    def _produce_one(self) -> bool:
        slot = self._slots[self.sent % len(self._slots)]
        seq = self._next_seq[slot]
        try:
            self._producer.produce(
                slot[0], value=encode(slot[0], slot[1], seq), partition=slot[1], on_delivery=self._on_delivery
            )
        except BufferError:  # the client's queue is full while brokers are away: wait a little
            self._producer.poll(0.2)
            return False
        except KafkaException as exc:
            self._fatal = str(exc)
            return False
        self._next_seq[slot] = seq + 1
        self.sent += 1
        return True

    def _replace_client(self) -> None:
        self._on_note("producer-fatal", f"replacing the producer after a fatal error: {self._fatal}")
        self._fatal = None
        self._producer.flush(10)
        self._producer = self._new_client()
        self.clients += 1

    def _run(self) -> None:
        started = time.monotonic()
        produced = 0
        while not self._stop.is_set():
            if self._fatal is not None:
                self._replace_client()
            due = int((time.monotonic() - started) * self._rate) - produced
            if due > self._rate:
                started += (due - self._rate) / self._rate
                due = self._rate
            for _ in range(due):
                if not self._produce_one():
                    break
                produced += 1
            self._producer.poll(0)
            self._stop.wait(0.01)

    def start(self) -> SteadyProducer:
        """Start writing in the background."""
        self._thread.start()
        return self

    def stop(self, flush_s: float = 120) -> None:
        """Stop writing, then wait (bounded) for every outstanding acknowledgement; the rest is `unacknowledged`."""
        self.halt()
        self.unacknowledged = self._producer.flush(flush_s)

    def halt(self) -> None:
        """Stop writing without waiting for acknowledgements; safe to call twice."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)

    def close(self) -> None:
        """Stop writing and release the client (before the brokers go away, so it does not log reconnects)."""
        self.halt()
        if not self._thread.is_alive():
            self._producer.purge()
            self._producer.close()  # type: ignore[attr-defined]  # confluent-kafka 2.16 has it; the stubs lag
