"""data-mirror killed with SIGKILL mid-stream, in both delivery modes: nothing lost, and exactly-once repeats nothing.

Apart from test_data_mirror.py so that the two longest data-mirror tests can run beside the others (pytest-xdist
spreads whole files over its workers).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from shared.kafka.factories import confluent_producer
from shared.localkafka import KafkaCluster
from tests.support.kafka_io import consume_all, consume_to_end, end_offsets_sum, make_topic
from tests.support.mm2_config import write_mm2_config
from tests.support.service_process import ServiceProcess
from tests.support.verify_oracle import assert_nothing_lost
from tests.support.waiting import wait_until


def _config(tmp_path: Path, a: KafkaCluster, b: KafkaCluster, topic: str, **flow: str) -> Path:
    return write_mm2_config(tmp_path / "mm2.properties", {"A": a, "B": b}, {"A->B": {"topics": topic, **flow}})


class Writer(threading.Thread):
    """Writes records `<partition>:<i>` from `start` on, a slice of every partition at a time, so the source is
    still being written when data-mirror is killed (a copy faster than the test's polling cannot end first)."""

    def __init__(self, props: dict[str, str], topic: str, partitions: int, start: int, end: int) -> None:
        super().__init__(daemon=True)
        self.props, self.topic, self.partitions, self.start_at, self.end = props, topic, partitions, start, end
        self.written = start
        self.error: BaseException | None = None

    def run(self) -> None:
        producer = confluent_producer(self.props, **{"enable.idempotence": True, "linger.ms": 5})
        try:
            for first in range(self.start_at, self.end, SLICE):
                for p in range(self.partitions):
                    for i in range(first, min(first + SLICE, self.end)):
                        producer.produce(self.topic, value=f"{p}:{i}".encode(), partition=p)
                assert producer.flush(30) == 0, "records not delivered within 30 s"
                self.written = min(first + SLICE, self.end)
                time.sleep(0.02)
        except BaseException as exc:  # reported by the test, which joins the thread
            self.error = exc


SLICE = 500


@pytest.mark.parametrize("exactly_once", [False, True], ids=["at-least-once", "exactly-once"])
def test_kill_9_mid_stream_loses_nothing(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path, exactly_once: bool
) -> None:
    topic, partitions, per_partition = f"crash-{unique}", 4, 30_000
    total = partitions * per_partition
    source = cluster_a.client_properties()
    make_topic(source, topic, partitions=partitions)
    make_topic(cluster_b.client_properties(), f"A.{topic}", partitions=partitions)
    backlog = Writer(source, topic, partitions, 0, per_partition // 4)
    backlog.run()  # here, before data-mirror starts
    assert backlog.error is None, backlog.error
    flow = {"exactly.once.support": "enabled"} if exactly_once else {}
    config = _config(tmp_path, cluster_a, cluster_b, topic, **flow)
    target = cluster_b.client_properties()
    writer = Writer(source, topic, partitions, per_partition // 4, per_partition)
    first = ServiceProcess("data_mirror", config, tmp_path, env={"STRAIT_COMMIT_INTERVAL_MS": "300"}).start()
    try:
        wait_until(lambda: end_offsets_sum(target, f"A.{topic}", partitions) > 0, 240, "first records")
        writer.start()
        wait_until(lambda: end_offsets_sum(target, f"A.{topic}", partitions) > total // 10, 120, "a tenth copied")
    finally:
        first.kill()
    assert writer.is_alive(), "the source was fully written before the crash: nothing was mid-stream"
    copied = end_offsets_sum(target, f"A.{topic}", partitions)
    assert 0 < copied < total
    writer.join(120)
    assert writer.error is None, writer.error
    assert writer.written == per_partition

    with ServiceProcess("data_mirror", config, tmp_path, env={"STRAIT_COMMIT_INTERVAL_MS": "300"}) as second:
        isolation = "read_committed" if exactly_once else "read_uncommitted"
        records = consume_all(target, f"A.{topic}", expected=total, timeout_s=240, isolation_level=isolation)
        time.sleep(2)  # copies still on their way (duplicates) land by now
        records = consume_to_end(target, f"A.{topic}", isolation_level=isolation)
        assert second.stop() == 0

    assert_nothing_lost(config, "A->B", topic, records=total, exactly_once=exactly_once)
    seen: dict[bytes, int] = {}
    for record in records:
        assert record.value is not None
        seen[record.value] = seen.get(record.value, 0) + 1
    missing = [f"{p}:{i}" for p in range(partitions) for i in range(per_partition) if f"{p}:{i}".encode() not in seen]
    duplicates = len(records) - len(seen)
    print(f"\n{'exactly-once' if exactly_once else 'at-least-once'}: lost={len(missing)} duplicates={duplicates}")
    assert not missing, f"{len(missing)} records lost, e.g. {missing[:5]}"
    if exactly_once:
        assert duplicates == 0
    else:
        # Re-copied records are one uncommitted epoch per partition: a single contiguous block of offsets.
        for p in range(partitions):
            twice = sorted(int(v.split(b":")[1]) for v, n in seen.items() if n > 1 and v.startswith(f"{p}:".encode()))
            assert twice == list(range(twice[0], twice[0] + len(twice))) if twice else True
