"""Follow a checkpoints topic while a tool writes it, and match commits to the first checkpoint covering each.

A commit is covered by the first checkpoint (in log order) of its group and partition whose upstream offset
reaches the committed offset; its lag is the time that checkpoint was read on the target minus the commit's
acknowledgement. The read time, not the record's timestamp: MM2 stamps a checkpoint with the moment it read the
group's offsets, and writes the checkpoints of a whole round only when the round is over.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping

from confluent_kafka import OFFSET_BEGINNING, TopicPartition

from benchmarks.group_committer import TimedCommit
from shared.errors import CodecError
from shared.kafka.factories import confluent_consumer
from shared.records.checkpoint import Checkpoint

# (group, partition) -> [(upstream offset, wall clock ms when it was on the target)] in log order
Written = dict[tuple[str, int], list[tuple[int, int]]]


def commit_lags(commits: Iterable[TimedCommit], written: Written) -> tuple[list[float], int]:
    """Each covered commit's lag in ms, and how many commits no checkpoint covers.

    A group's commits only move forward, so the covering checkpoint of a later commit is never earlier in the
    log than that of an earlier one: one pass per group and partition.
    """
    by_key: dict[tuple[str, int], list[TimedCommit]] = {}
    for commit in commits:
        by_key.setdefault((commit.group, commit.partition), []).append(commit)
    lags: list[float] = []
    uncovered = 0
    for key, ordered in by_key.items():
        checkpoints = written.get(key, [])
        index = 0
        for commit in sorted(ordered, key=lambda c: c.offset):
            while index < len(checkpoints) and checkpoints[index][0] < commit.offset:
                index += 1
            if index == len(checkpoints):
                uncovered += 1
            else:
                lags.append(max(0.0, checkpoints[index][1] - commit.acked_ms))
    return lags, uncovered


def checkpoint_delays(commits: Iterable[TimedCommit], written: Written) -> list[float]:
    """For each checkpoint whose upstream offset is exactly a timed commit's, how long after that commit it was
    written (ms); only a position's first checkpoint counts.

    Unlike `commit_lags`, this does not depend on which commits a tool skips, so it is the delay of the tool's
    round or stream itself.
    """
    acked = {(c.group, c.partition, c.offset): c.acked_ms for c in commits}
    delays: list[float] = []
    for (group, partition), checkpoints in written.items():
        seen: set[int] = set()
        for upstream, timestamp_ms in checkpoints:
            at = acked.get((group, partition, upstream))
            if at is not None and upstream not in seen:
                seen.add(upstream)
                delays.append(max(0.0, timestamp_ms - at))
    return delays


class CheckpointFollower:
    """Reads `topic` from its start in a thread, keeping the checkpoints of `remote_topic` (its remote name)."""

    def __init__(self, props: Mapping[str, str], topic: str, remote_topic: str) -> None:
        self._consumer = confluent_consumer(
            props, **{"group.id": "strait-bench-checkpoints", "enable.auto.commit": False}
        )
        self._topic = topic
        self._remote_topic = remote_topic
        self._lock = threading.Lock()
        self._written: Written = {}
        self.records = 0  # checkpoint records of the remote topic read so far
        self.undecodable = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="checkpoint-follower", daemon=True)

    def start(self) -> CheckpointFollower:
        """Begin following (waits in the thread for the topic to exist)."""
        self._thread.start()
        return self

    def covered_partitions(self) -> int:
        """How many (group, partition) pairs have at least one checkpoint."""
        with self._lock:
            return len(self._written)

    def stop(self) -> Written:
        """Stop following and return what was read."""
        self._stop.set()
        self._thread.join(timeout=30)
        self._consumer.close()
        with self._lock:
            return self._written

    def _run(self) -> None:
        while not self._stop.is_set():
            found = self._consumer.list_topics(self._topic, timeout=10).topics.get(self._topic)
            if found is not None and found.error is None and found.partitions:
                break
            self._stop.wait(1)
        else:
            return
        self._consumer.assign([TopicPartition(self._topic, p, OFFSET_BEGINNING) for p in found.partitions])
        while not self._stop.is_set():
            messages = self._consumer.consume(num_messages=1000, timeout=0.5)
            seen_ms = time.time() * 1000
            for message in messages:
                key, value = message.key(), message.value()
                if message.error() or key is None or value is None:
                    continue
                try:
                    checkpoint = Checkpoint.decode(key, value)
                except CodecError:
                    self.undecodable += 1
                    continue
                if checkpoint.topic != self._remote_topic:
                    continue
                with self._lock:
                    entry = (checkpoint.upstream_offset, round(seen_ms))
                    self._written.setdefault((checkpoint.group, checkpoint.partition), []).append(entry)
                    self.records += 1
