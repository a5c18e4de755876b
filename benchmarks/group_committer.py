"""Many consumer groups committing continuously at a set rate, each commit timed when the broker acknowledged it.

One admin client sends the commits (the groups have no members, as MM2's tests commit them); requests are paced,
a bounded number is in flight, and a commit's time is taken in its acknowledgement callback, not when a batch of
them was waited for.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

from shared.kafka.factories import confluent_admin

MAX_IN_FLIGHT = 2000
PACING_SLICE_S = 0.1  # commits are sent in slices this far apart


@dataclass(frozen=True, slots=True)
class TimedCommit:
    """One group's new position on one partition and the wall clock (ms) when the broker acknowledged it."""

    group: str
    partition: int
    offset: int
    acked_ms: float


class PacedCommitter:
    """`groups` commit in turn on `topic`, `rate` group commits per second, each moving every partition a little."""

    def __init__(
        self,
        props: Mapping[str, str],
        topic: str,
        groups: Sequence[str],
        *,
        partitions: int,
        end_offset: int,
        rate: float,
        max_step: int,
        seed: int,
    ) -> None:
        self._admin = confluent_admin(props)
        self._topic = topic
        self._groups = list(groups)
        self._partitions = partitions
        self._end_offset = end_offset
        self._rate = rate
        self._max_step = max_step
        self._rng = random.Random(seed)
        self._positions = dict.fromkeys(((g, p) for g in self._groups for p in range(partitions)), 0)
        self._in_flight = threading.BoundedSemaphore(MAX_IN_FLIGHT)
        self._lock = threading.Lock()
        self.commits: list[TimedCommit] = []
        self.sent = 0  # group commits sent
        self.acknowledged = 0  # group commits the broker accepted
        self.failed: dict[str, str] = {}  # group -> first error
        self._next = 0

    def run(self, duration_s: float) -> None:
        """Commit for `duration_s` seconds, then wait (up to 60 s) for the answers still outstanding."""
        per_slice = max(1, round(self._rate * PACING_SLICE_S))
        due = time.monotonic()
        end = due + duration_s
        while time.monotonic() < end:
            for _ in range(per_slice):
                self._commit_next()
            due += per_slice / self._rate
            time.sleep(max(0.0, due - time.monotonic()))
        for _ in range(MAX_IN_FLIGHT):  # every permit back: nothing left in flight
            if not self._in_flight.acquire(timeout=60):
                break

    def _commit_next(self) -> None:
        group = self._groups[self._next % len(self._groups)]
        self._next += 1
        moved: list[tuple[int, int]] = []
        for partition in range(self._partitions):
            current = self._positions[(group, partition)]
            offset = min(self._end_offset, current + self._rng.randint(1, self._max_step))
            if offset > current:
                moved.append((partition, offset))
        if not moved:
            return
        self._in_flight.acquire()
        request = [ConsumerGroupTopicPartitions(group, [TopicPartition(self._topic, p, o) for p, o in moved])]
        try:
            futures = self._admin.alter_consumer_group_offsets(request, request_timeout=30)
        except Exception:
            self._in_flight.release()
            raise
        for partition, offset in moved:
            self._positions[(group, partition)] = offset
        self.sent += 1
        futures[group].add_done_callback(lambda future: self._acknowledged(group, moved, future))

    def _acknowledged(self, group: str, moved: list[tuple[int, int]], future: Future[Any]) -> None:
        acked_ms = time.time() * 1000
        try:
            answer = future.result()
            error = next((tp.error for tp in answer.topic_partitions or [] if tp.error is not None), None)
        except Exception as exc:  # any failure is counted; the run goes on
            error = exc
        with self._lock:
            if error is not None:
                self.failed.setdefault(group, str(error))
            else:
                self.acknowledged += 1
                self.commits.extend(TimedCommit(group, p, o, acked_ms) for p, o in moved)
        self._in_flight.release()
