"""The soak's two 3-broker clusters, its source topics and the MM2 config every service reads."""

from __future__ import annotations

from pathlib import Path

from shared.kafka.factories import confluent_admin
from shared.kafka.topics import create_topic
from shared.localkafka import KafkaCluster
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


def start_clusters(workdir: Path) -> tuple[KafkaCluster, KafkaCluster]:
    """Start A and B (3 brokers each) from the calling thread, which must outlive them (the main thread)."""
    source = KafkaCluster(SOURCE, brokers=BROKERS, workdir=workdir / "A", broker_overrides=BROKER_OVERRIDES)
    target = KafkaCluster(TARGET, brokers=BROKERS, workdir=workdir / "B", broker_overrides=BROKER_OVERRIDES)
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


def write_config(path: Path, source: KafkaCluster, target: KafkaCluster) -> Path:
    """The flow A->B for the soak topics and group, internal topics with three replicas, Spark on two threads."""
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
        "spark.driver.memory": "1g",
    }
    return write_mm2_config(path, {SOURCE: source, TARGET: target}, {f"{SOURCE}->{TARGET}": flow}, extra=extra)
