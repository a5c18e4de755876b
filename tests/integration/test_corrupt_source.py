"""A record batch whose checksum fails on the source is never copied: its partition stops before it with an error
that names it, and what came before it arrives whole (both copy paths; a new CRC must not launder the damage).

The damage is real: one byte of a record's value is flipped in the source broker's log segment on disk, which
the broker serves as it is (a broker does not check CRCs when it reads for a fetch).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shared.localkafka import KafkaCluster
from tests.support.kafka_io import consume_all, consume_to_end, make_topic, produce
from tests.support.mm2_config import write_mm2_config
from tests.support.service_process import ServiceProcess

MARK = b"damaged-here"


def _flip_a_byte(cluster: KafkaCluster, topic: str, mark: bytes) -> None:
    """Change one byte inside `mark` in the partition's log segment (the broker reads through the page cache)."""
    (segment,) = (cluster.nodes[0].data_dir / f"{topic}-0").glob("*.log")
    data = bytearray(segment.read_bytes())
    at = data.index(mark)
    with segment.open("r+b") as log:
        log.seek(at)
        log.write(b"D")  # 'd' -> 'D': same length, different checksum


@pytest.mark.parametrize("copy_batches", ["auto", "off"])
def test_a_corrupt_source_batch_stops_its_partition_and_nothing_of_it_is_copied(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path, copy_batches: str
) -> None:
    topic = f"corrupt-{copy_batches}-{unique}"
    make_topic(cluster_a.client_properties(), topic)
    make_topic(cluster_b.client_properties(), f"A.{topic}")
    for part in range(3):  # three produce calls: the damaged record's batch starts at offset 50 or later
        values = [f"{part}-{i}".encode() + (MARK if (part, i) == (1, 10) else b"") for i in range(50)]
        produce(cluster_a.client_properties(), topic, [(None, value) for value in values], partition=0)
    _flip_a_byte(cluster_a, topic, MARK)
    flow = {"topics": topic, "strait.copy.batches": copy_batches}
    config = write_mm2_config(tmp_path / "mm2.properties", {"A": cluster_a, "B": cluster_b}, {"A->B": flow})
    with ServiceProcess("data_mirror", config, tmp_path, env={"STRAIT_COMMIT_INTERVAL_MS": "300"}) as mirror:
        stopped = mirror.wait_for_log("record_refused_partition_stopped", 120, topic=topic)
        assert "corrupt record batch on the source" in str(stopped["reason"])
        blocked_at = int(stopped["offset"])
        assert 50 <= blocked_at <= 60, "it stops at the damaged record's batch, after the whole first batch"
        target = consume_all(cluster_b.client_properties(), f"A.{topic}", expected=blocked_at, timeout_s=60)
        assert mirror.stop() == 0
    copied = [record.value for record in consume_to_end(cluster_b.client_properties(), f"A.{topic}")]
    assert len(target) == blocked_at
    assert copied == [f"{i // 50}-{i % 50}".encode() for i in range(blocked_at)], "everything before it, once"
    assert not any(value and MARK.upper()[:1] + MARK[1:] in value for value in copied)
