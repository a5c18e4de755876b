"""Install step: make the brokers' class-data archive (`class_archive.py`) by running one broker that writes it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from shared.localkafka.class_archive import archive_path
from shared.localkafka.cluster import KafkaCluster

EXIT_WAIT_S = 120


def build_archive(classpath: str) -> Path:
    """Start a one-node cluster whose broker writes the classes it loaded at exit, use it, stop it, keep the file."""
    path = archive_path(classpath)
    partial = path.with_suffix(f".{os.getpid()}.partial")
    partial.unlink(missing_ok=True)
    cluster = KafkaCluster("ARCHIVE", jvm_options=[f"-XX:ArchiveClassesAtExit={partial}"])
    try:
        cluster.start()
        _write_and_read({"bootstrap.servers": cluster.bootstrap_servers})
    finally:
        for node in cluster.nodes:  # SIGTERM: the JVM writes the archive as it exits, which takes a while under load
            node.process.stop(timeout_s=EXIT_WAIT_S)
        cluster.stop()
    if not partial.is_file():
        raise RuntimeError(f"the broker wrote no class-data archive to {partial}")
    shutil.move(partial, path)
    return path


def _write_and_read(servers: dict[str, str]) -> None:
    """Create a topic, write records and read them in a group, so the broker loads the classes that serve clients.
    The clients are gone when this returns (before the broker stops, else they retry it until the process exits)."""
    admin = AdminClient(servers)  # kept: a collected client cancels its requests
    admin.create_topics([NewTopic("archive", 2, 1)])["archive"].result(30)
    producer = Producer({**servers, "enable.idempotence": True, "compression.type": "lz4"})
    for i in range(100):
        producer.produce("archive", f"record-{i}".encode(), partition=i % 2)
    if producer.flush(30):
        raise RuntimeError("the archive broker did not acknowledge its records")
    consumer = Consumer({**servers, "group.id": "archive", "auto.offset.reset": "earliest"})
    consumer.subscribe(["archive"])
    read = 0
    for _ in range(60):
        read += len([m for m in consumer.consume(100, timeout=0.5) if m.error() is None])
        if read >= 100:
            break
    consumer.commit(asynchronous=False)
    consumer.close()
