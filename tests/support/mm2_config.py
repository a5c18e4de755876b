"""Write MM2-format config files that point at harness clusters, as a user would write them."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from shared.localkafka import SaslUser
from shared.localkafka.cluster import ClusterAddress

SINGLE_BROKER_DEFAULTS = {
    "replication.factor": "1",
    "checkpoints.topic.replication.factor": "1",
    "heartbeats.topic.replication.factor": "1",
    "offset-syncs.topic.replication.factor": "1",
}
# MM2 started on these files finds its plugins by their ServiceLoader manifests instead of reflecting over every class
# on the classpath (its own start-up warning recommends it): the reflection scan took 34-46 s per MM2 start on a
# loaded test machine. MM2 reads the key at the top level and, for the herder writing to a cluster, under that
# cluster's alias. Strait ignores it. The benchmarks' MM2 files leave it at MM2's default.
FAST_MM2_START = {"plugin.discovery": "service_load"}


def write_mm2_config(
    path: Path,
    clusters: Mapping[str, ClusterAddress],
    flows: Mapping[str, Mapping[str, str]],
    extra: Mapping[str, str] | None = None,
    *,
    users: Mapping[str, SaslUser] | None = None,
) -> Path:
    """`flows` maps "A->B" to that flow's settings (without the prefix); `enabled=true` is implied. A cluster
    named in `users` is reached as that user (SASL clusters), the others with the harness's own credentials."""
    lines = [f"clusters={', '.join(clusters)}"]
    for alias, cluster in clusters.items():
        props = cluster.client_properties((users or {}).get(alias))
        lines += [f"{alias}.{key}={value}" for key, value in {**props, **FAST_MM2_START}.items()]
    for flow, settings in flows.items():
        lines.append(f"{flow}.enabled=true")
        lines += [f"{flow}.{key}={value}" for key, value in settings.items()]
    lines += [f"{key}={value}" for key, value in {**SINGLE_BROKER_DEFAULTS, **FAST_MM2_START, **(extra or {})}.items()]
    path.write_text("\n".join(lines) + "\n")
    return path
