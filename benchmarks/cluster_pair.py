"""The source and target clusters a benchmark section starts for itself, stopped even when it fails."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from shared.localkafka import KafkaCluster


@contextmanager
def cluster_pair() -> Iterator[tuple[KafkaCluster, KafkaCluster]]:
    """Clusters A and B, one broker each, started side by side."""
    a, b = KafkaCluster("A"), KafkaCluster("B")
    try:
        a.launch()
        b.launch()
        a.wait_ready()
        b.wait_ready()
        yield a, b
    finally:
        b.stop()
        a.stop()
