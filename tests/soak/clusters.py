"""The soak's two 3-broker clusters (behind a fault proxy when the run injects network faults), its source topics
and the MM2 configs: the services' (through the proxy, when there is one) and the direct one the checks read."""

from __future__ import annotations

from pathlib import Path

from shared.kafka.factories import confluent_admin
from shared.kafka.topics import create_topic
from shared.localkafka import KafkaCluster
from shared.localkafka.cluster import ClusterAddress
from shared.localkafka.fault_proxy import FaultProxy
from tests.support.mm2_config import write_mm2_config

SOURCE, TARGET = "A", "B"
GROUP = "soak-consumers"
BROKERS = 3
# Production durability: three replicas, and an acknowledged write is on at least two of them.
BROKER_OVERRIDES = {"min.insync.replicas": "2"}
THREE_REPLICAS = {
    "replication.factor": "3",
    "checkpoints.topic.replication.factor": "3",
    "heartbeats.topic.replication.factor": "3",
    "offset-syncs.topic.replication.factor": "3",
}


def topic_names(count: int) -> list[str]:
    """The source topics: soak-0, soak-1, ..."""
    return [f"soak-{index}" for index in range(count)]


def remote_name(topic: str) -> str:
    """The topic's name on the target (DefaultReplicationPolicy)."""
    return f"{SOURCE}.{topic}"


def start_clusters(workdir: Path, proxy: FaultProxy | None = None) -> tuple[KafkaCluster, KafkaCluster]:
    """Start A and B (3 brokers each) from the calling thread, which must outlive them (the main thread); with
    `proxy`, each broker also listens behind it (`via_proxy`), for clients whose network faults the run controls."""
    source, target = (
        KafkaCluster(name, brokers=BROKERS, workdir=workdir / name, broker_overrides=BROKER_OVERRIDES, proxy=proxy)
        for name in (SOURCE, TARGET)
    )
    try:
        source.launch()
        target.launch()
        source.wait_ready(timeout_s=240)
        target.wait_ready(timeout_s=240)
    except BaseException:
        source.stop()
        target.stop()
        raise
    return source, target


def create_source_topics(cluster: KafkaCluster, topics: list[str], partitions: int) -> None:
    """The topics the producer writes, with three replicas each."""
    admin = confluent_admin(cluster.client_properties())
    for topic in topics:
        create_topic(admin, topic, partitions=partitions, replication_factor=BROKERS, timeout_s=60)


def write_config(path: Path, source: KafkaCluster, target: KafkaCluster, *, through_proxy: bool = False) -> Path:
    """The flow A->B for the soak topics and group, internal topics with three replicas, Spark on two threads;
    `through_proxy`: every address is the fault proxy's (the services' config when network faults are on)."""
    flow = {
        "topics": "soak-.*",
        "groups": GROUP,
        "emit.checkpoints.interval.seconds": "5",
        "sync.group.offsets.enabled": "false",
    }
    extra = {
        **THREE_REPLICAS,
        "emit.heartbeats.interval.seconds": "1",
        "spark.master": "local[2]",
        "spark.driver.memory": "512m",
    }
    clusters: dict[str, ClusterAddress] = {SOURCE: source, TARGET: target}
    if through_proxy:
        clusters = {SOURCE: source.via_proxy(), TARGET: target.via_proxy()}
    return write_mm2_config(path, clusters, {f"{SOURCE}->{TARGET}": flow}, extra=extra)
