"""A record batch whose checksum fails on the source is never copied: its partition stops before it with an error
that names it, and what came before it arrives whole (both copy paths, a flow each way under one data-mirror; a new
CRC must not launder the damage).

The damage is real: one byte of a record's value is flipped in the source broker's log segment on disk, which
the broker serves as it is (a broker does not check CRCs when it reads for a fetch).
"""

from __future__ import annotations

from pathlib import Path

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


# One data-mirror copies a damaged topic each way, one per copy path.
COPY_BATCHES = {"A->B": "auto", "B->A": "off"}


def test_a_corrupt_source_batch_stops_its_partition_and_nothing_of_it_is_copied(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    clusters = {"A": cluster_a, "B": cluster_b}
    topics = {flow: f"corrupt-{batches}-{unique}" for flow, batches in COPY_BATCHES.items()}
    for flow, topic in topics.items():
        source, target = (clusters[alias] for alias in flow.split("->"))
        make_topic(source.client_properties(), topic)
        make_topic(target.client_properties(), f"{source.name}.{topic}")
        for part in range(3):  # three produce calls: the damaged record's batch starts at offset 50 or later
            values = [f"{part}-{i}".encode() + (MARK if (part, i) == (1, 10) else b"") for i in range(50)]
            produce(source.client_properties(), topic, [(None, value) for value in values], partition=0)
        _flip_a_byte(source, topic, MARK)
    flows = {flow: {"topics": topic, "strait.copy.batches": COPY_BATCHES[flow]} for flow, topic in topics.items()}
    config = write_mm2_config(tmp_path / "mm2.properties", clusters, flows)
    delivered: dict[str, int] = {}
    with ServiceProcess("data_mirror", config, tmp_path, env={"STRAIT_COMMIT_INTERVAL_MS": "300"}) as mirror:
        for flow, topic in topics.items():
            stopped = mirror.wait_for_log("record_refused_partition_stopped", 120, topic=topic)
            assert "corrupt record batch on the source" in str(stopped["reason"]), flow
            blocked_at = int(stopped["offset"])
            assert 50 <= blocked_at <= 60, f"{flow}: it stops at the damaged record's batch, after the first batch"
            target_props = clusters[flow[-1]].client_properties()
            remote = f"{flow[0]}.{topic}"
            delivered[flow] = len(consume_all(target_props, remote, expected=blocked_at, timeout_s=60))
            assert delivered[flow] == blocked_at, flow
        assert mirror.stop() == 0
    for flow, topic in topics.items():
        target_props = clusters[flow[-1]].client_properties()
        copied = [record.value for record in consume_to_end(target_props, f"{flow[0]}.{topic}")]
        expected = [f"{i // 50}-{i % 50}".encode() for i in range(delivered[flow])]
        assert copied == expected, f"{flow}: everything before it, once"
        assert not any(value and MARK.upper()[:1] + MARK[1:] in value for value in copied), flow
