"""Client quotas on a test cluster (tests/support/java/ClientQuota.java, Kafka's Admin API): the throttling a shared
production cluster applies to the clients writing to it."""

from __future__ import annotations

from shared.localkafka import KafkaCluster
from tests.support.java_helper import run_java_helper


def throttle_producers(cluster: KafkaCluster, bytes_per_s: int | None, timeout_s: float = 30) -> None:
    """Give every client of `cluster` without a quota of its own a produce quota of `bytes_per_s` (None: none)."""
    rate = "none" if bytes_per_s is None else str(bytes_per_s)
    run_java_helper("ClientQuota", [cluster.bootstrap_servers, rate, str(int(timeout_s * 1000))], timeout_s + 60)
