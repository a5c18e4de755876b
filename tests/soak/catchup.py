"""Has the mirror caught up? The newest record of every source partition is the newest of its remote copy."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from confluent_kafka import KafkaException, TopicPartition

from shared.kafka.factories import confluent_consumer


def tail_values(props: Mapping[str, str], topic: str, partitions: int, timeout_s: float = 30) -> dict[int, bytes]:
    """The value of the last record of each non-empty partition of `topic`."""
    consumer = confluent_consumer(props, **{"group.id": "soak-tail", "enable.auto.commit": False})
    try:
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(partitions)}
        wanted = {p: end - 1 for p, end in ends.items() if end > 0}
        consumer.assign([TopicPartition(topic, p, offset) for p, offset in wanted.items()])
        found: dict[int, bytes] = {}
        deadline = time.monotonic() + timeout_s
        while len(found) < len(wanted) and time.monotonic() < deadline:
            for message in consumer.consume(num_messages=100, timeout=0.5):
                partition = message.partition() or 0
                if message.error() is None and message.offset() == wanted.get(partition):
                    found[partition] = message.value() or b""
        return found
    finally:
        consumer.close()


def caught_up(
    source_props: Mapping[str, str], target_props: Mapping[str, str], pairs: list[tuple[str, str]], partitions: int
) -> bool:
    """True when, for every (topic, remote) pair and partition, the target's last record is the source's last."""
    for topic, remote in pairs:
        source = tail_values(source_props, topic, partitions)
        if tail_values(target_props, remote, partitions) != source:
            return False
    return True


def wait_caught_up(
    source_props: Mapping[str, str],
    target_props: Mapping[str, str],
    pairs: list[tuple[str, str]],
    partitions: int,
    timeout_s: float,
    tick: Callable[[], None],
) -> bool:
    """Check `caught_up` every few seconds, calling `tick()` in between (supervision), until it holds (True) or
    `timeout_s` passes (False)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if caught_up(source_props, target_props, pairs, partitions):
                return True
        except KafkaException:  # a leader moving: look again
            pass
        tick()
        time.sleep(5)
    return False
