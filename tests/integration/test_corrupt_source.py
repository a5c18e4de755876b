"""A record batch whose checksum fails on the source is never copied: its partition stops before it with an error
that names it, and what came before it arrives whole (both copy paths; a new CRC must not launder the damage).

The damage is real: one byte of a record's value is flipped in the source broker's log segment on disk, which
the broker serves as it is (a broker does not check CRCs when it reads for a fetch). The damaged batch comes after
other batches in a fetch, or first (the mirror resumes right at it). Once it reads it first in a fetch (at once, or
when it fetches again after the error), librdkafka 2.16 follows its CRC error with a made-up batch at a garbage
offset and reports that offset out of range, after which it refuses a seek: that failed the task at once or at
every retry (and a task that fails copies again what it had not committed) until the record path ignored what the
consumer says about a partition it stopped and read it again by assigning it anew.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from shared.localkafka import KafkaCluster
from tests.support.kafka_io import consume_all, consume_to_end, make_topic, produce
from tests.support.mm2_config import write_mm2_config
from tests.support.service_process import ServiceProcess

MARK = b"damaged-here"
PER_BATCH = 50  # records per produce call: the damaged record (batch 1, record 10) is in the batch at offset 50
ENV = {"STRAIT_COMMIT_INTERVAL_MS": "300", "STRAIT_BLOCKED_RETRY_S": "1"}
RETRIES_WATCHED = 3  # the damaged batch is read again every second: this many times, and the task goes on


def _flip_a_byte(cluster: KafkaCluster, topic: str, mark: bytes) -> None:
    """Change one byte inside `mark` in the partition's log segment (the broker reads through the page cache)."""
    (segment,) = (cluster.nodes[0].data_dir / f"{topic}-0").glob("*.log")
    data = bytearray(segment.read_bytes())
    at = data.index(mark)
    with segment.open("r+b") as log:
        log.seek(at)
        log.write(b"D")  # 'd' -> 'D': same length, different checksum


def _produce_batches(cluster: KafkaCluster, topic: str, batches: range) -> None:
    for batch in batches:  # one produce call each: one batch each
        values = [f"{batch}-{i}".encode() + (MARK if (batch, i) == (1, 10) else b"") for i in range(PER_BATCH)]
        produce(cluster.client_properties(), topic, [(None, value) for value in values], partition=0)


@pytest.mark.parametrize("where", ["after-other-batches", "first-in-its-fetch"])
@pytest.mark.parametrize("copy_batches", ["auto", "off"])
def test_a_corrupt_source_batch_stops_its_partition_and_nothing_of_it_is_copied(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path, copy_batches: str, where: str
) -> None:
    topic = f"corrupt-{copy_batches}-{unique}"
    make_topic(cluster_a.client_properties(), topic)
    make_topic(cluster_b.client_properties(), f"A.{topic}")
    flow = {"topics": topic, "strait.copy.batches": copy_batches}
    config = write_mm2_config(tmp_path / "mm2.properties", {"A": cluster_a, "B": cluster_b}, {"A->B": flow})
    if where == "first-in-its-fetch":  # the first batch is copied and committed before the damaged one is written
        _produce_batches(cluster_a, topic, range(1))
        with ServiceProcess("data_mirror", config, tmp_path, env=ENV) as mirror:
            consume_all(cluster_b.client_properties(), f"A.{topic}", expected=PER_BATCH, timeout_s=60)
            assert mirror.stop() == 0
        _produce_batches(cluster_a, topic, range(1, 3))
    else:
        _produce_batches(cluster_a, topic, range(3))
    _flip_a_byte(cluster_a, topic, MARK)
    with ServiceProcess("data_mirror", config, tmp_path, env=ENV) as mirror:
        stopped = mirror.wait_for_log("record_refused_partition_stopped", 120, topic=topic)
        assert "corrupt record batch on the source" in str(stopped["reason"])
        blocked_at = int(stopped["offset"])
        assert PER_BATCH <= blocked_at <= PER_BATCH + 10, "it stops at the damaged record's batch, after the first"
        target = consume_all(cluster_b.client_properties(), f"A.{topic}", expected=blocked_at, timeout_s=60)
        time.sleep(RETRIES_WATCHED + 0.5)
        failures = [
            line for line in mirror.logs() if line.get("event") == "mirror_error" and line.get("kind") == "task"
        ]
        assert not failures, "reading the damaged batch again must not fail the task"
        assert mirror.stop() == 0
    copied = [record.value for record in consume_to_end(cluster_b.client_properties(), f"A.{topic}")]
    assert len(target) == blocked_at
    assert copied == [f"{i // PER_BATCH}-{i % PER_BATCH}".encode() for i in range(blocked_at)], "all before it, once"
    assert not any(value and MARK.upper()[:1] + MARK[1:] in value for value in copied)
