"""MM2's checkpoint connector alone, in a Connect standalone worker, so its CPU and memory can be measured apart.

Dedicated-mode MM2 runs its source, checkpoint and heartbeat connectors in one JVM; MM2's documentation also runs
each connector in a Connect cluster. Here `MirrorCheckpointConnector` runs by itself in
`org.apache.kafka.connect.cli.ConnectStandalone` (same Kafka release), reading the offset syncs a dedicated-mode
MM2 wrote while it mirrored the data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from benchmarks.contenders import MM2_HEAP_MB
from shared.localkafka import KafkaCluster
from shared.localkafka.mirror_maker import write_properties
from shared.localkafka.processes import JvmProcess
from tests.support.mm2_config import SINGLE_BROKER_DEFAULTS

CONNECT_STANDALONE_MAIN = "org.apache.kafka.connect.cli.ConnectStandalone"
BYTES = "org.apache.kafka.connect.converters.ByteArrayConverter"


def checkpoint_connector(
    source: KafkaCluster,
    target: KafkaCluster,
    workdir: Path,
    *,
    name: str,
    topics: str,
    groups: str,
    tasks: int,
    interval_s: int,
    extra: Mapping[str, str] | None = None,
    jvm_options: Sequence[str] = (),
) -> JvmProcess:
    """A not yet started JVM running `MirrorCheckpointConnector` for source -> target ("A" -> "B")."""
    worker = {
        "bootstrap.servers": target.client_properties()["bootstrap.servers"],
        "key.converter": BYTES,
        "value.converter": BYTES,
        "offset.storage.file.filename": str(workdir / f"{name}.offsets"),
        "listeners": "http://127.0.0.1:0",
    }
    connector = {
        "name": name,
        "connector.class": "org.apache.kafka.connect.mirror.MirrorCheckpointConnector",
        "source.cluster.alias": source.name,
        "target.cluster.alias": target.name,
        **{f"source.cluster.{k}": v for k, v in source.client_properties().items()},
        **{f"target.cluster.{k}": v for k, v in target.client_properties().items()},
        "topics": topics,
        "groups": groups,
        "tasks.max": str(tasks),
        "emit.checkpoints.enabled": "true",
        "emit.checkpoints.interval.seconds": str(interval_s),
        "sync.group.offsets.enabled": "false",
        **SINGLE_BROKER_DEFAULTS,
        **(extra or {}),
    }
    args = [
        str(write_properties(workdir / f"{name}-worker.properties", worker)),
        str(write_properties(workdir / f"{name}.properties", connector)),
    ]
    log_path = workdir / "logs" / f"{name}.log"
    return JvmProcess(CONNECT_STANDALONE_MAIN, args, log_path=log_path, heap_mb=MM2_HEAP_MB, jvm_options=jvm_options)
