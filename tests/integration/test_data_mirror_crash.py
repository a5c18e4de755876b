"""data-mirror killed with SIGKILL mid-stream while it copies a flow in each delivery mode: nothing lost, and
exactly-once repeats nothing.

Apart from test_data_mirror.py so that the two longest data-mirror tests can run beside the others (pytest-xdist
spreads whole files over its workers).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from shared.kafka.factories import confluent_producer
from shared.localkafka import KafkaCluster
from tests.support.kafka_io import Rec, consume_all, consume_to_end, end_offsets_sum, make_topic
from tests.support.mm2_config import write_mm2_config
from tests.support.service_process import ServiceProcess
from tests.support.verify_oracle import assert_nothing_lost
from tests.support.waiting import wait_until


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


# One data-mirror runs a flow each way, one per delivery mode, and is killed once with both mid-stream.
MODES = {"A->B": False, "B->A": True}  # flow -> exactly-once


def test_kill_9_mid_stream_loses_nothing(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    partitions, per_partition = 4, 30_000
    total = partitions * per_partition
    clusters = {"A": cluster_a, "B": cluster_b}
    topics: dict[str, str] = {}
    flows: dict[str, dict[str, str]] = {}
    writers: dict[str, Writer] = {}
    for flow, exactly_once in MODES.items():
        source, target = (clusters[alias].client_properties() for alias in flow.split("->"))
        topic = topics[flow] = f"crash-{flow[0].lower()}-{unique}"
        make_topic(source, topic, partitions=partitions)
        make_topic(target, f"{flow[0]}.{topic}", partitions=partitions)
        backlog = Writer(source, topic, partitions, 0, per_partition // 4)
        backlog.run()  # here, before data-mirror starts
        assert backlog.error is None, backlog.error
        writers[flow] = Writer(source, topic, partitions, per_partition // 4, per_partition)
        flows[flow] = {"topics": topic, **({"exactly.once.support": "enabled"} if exactly_once else {})}
    config = write_mm2_config(tmp_path / "mm2.properties", clusters, flows)
    remotes = {flow: (clusters[flow[-1]].client_properties(), f"{flow[0]}.{topic}") for flow, topic in topics.items()}
    env = {"STRAIT_COMMIT_INTERVAL_MS": "300"}
    first = ServiceProcess("data_mirror", config, tmp_path, env=env).start()
    try:
        for target, remote in remotes.values():
            wait_until(_more_than(target, remote, partitions, 0), 240, f"first records in {remote}")
        for writer in writers.values():
            writer.start()
        for target, remote in remotes.values():
            wait_until(_more_than(target, remote, partitions, total // 10), 120, f"a tenth copied to {remote}")
    finally:
        first.kill()
    for flow, writer in writers.items():
        assert writer.is_alive(), f"{flow}: the source was fully written before the crash: nothing was mid-stream"
        assert 0 < end_offsets_sum(*remotes[flow], partitions) < total
    for writer in writers.values():
        writer.join(120)
        assert writer.error is None, writer.error
        assert writer.written == per_partition

    copied: dict[str, list[Rec]] = {}
    with ServiceProcess("data_mirror", config, tmp_path, env=env) as second:
        for flow, (target, remote) in remotes.items():
            isolation = "read_committed" if MODES[flow] else "read_uncommitted"
            consume_all(target, remote, expected=total, timeout_s=240, isolation_level=isolation)
        time.sleep(2)  # copies still on their way (duplicates) land by now
        for flow, (target, remote) in remotes.items():
            isolation = "read_committed" if MODES[flow] else "read_uncommitted"
            copied[flow] = consume_to_end(target, remote, isolation_level=isolation)
        assert second.stop() == 0

    for flow, exactly_once in MODES.items():
        assert_nothing_lost(config, flow, topics[flow], records=total, exactly_once=exactly_once)
        _assert_once_or_one_block_again(copied[flow], partitions, per_partition, exactly_once, flow)


def _more_than(props: dict[str, str], topic: str, partitions: int, records: int) -> Callable[[], bool]:
    return lambda: end_offsets_sum(props, topic, partitions) > records


def _assert_once_or_one_block_again(
    records: list[Rec], partitions: int, per_partition: int, exactly_once: bool, flow: str
) -> None:
    """Every record written is there; exactly-once: none twice; at-least-once: what came twice is one contiguous
    block of offsets per partition (one uncommitted epoch copied again)."""
    seen: dict[bytes, int] = {}
    for record in records:
        assert record.value is not None
        seen[record.value] = seen.get(record.value, 0) + 1
    missing = [f"{p}:{i}" for p in range(partitions) for i in range(per_partition) if f"{p}:{i}".encode() not in seen]
    duplicates = len(records) - len(seen)
    print(f"\n{flow}: lost={len(missing)} duplicates={duplicates}")
    assert not missing, f"{flow}: {len(missing)} records lost, e.g. {missing[:5]}"
    if exactly_once:
        assert duplicates == 0, flow
    else:
        for p in range(partitions):
            twice = sorted(int(v.split(b":")[1]) for v, n in seen.items() if n > 1 and v.startswith(f"{p}:".encode()))
            assert twice == list(range(twice[0], twice[0] + len(twice))) if twice else True
