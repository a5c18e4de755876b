"""The source and target clusters a benchmark section starts for itself, stopped even when it fails."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

from shared.errors import KafkaOperationError
from shared.kafka.end_offsets import topic_end_offsets
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


def wait_mirrored(
    target_props: Mapping[str, str], remote: str, total: int, alive: Callable[[], str | None], timeout_s: float
) -> None:
    """Until the remote topic holds `total` records; fails at once with `alive()`'s answer when a tool exited."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if (topic_end_offsets(target_props, [remote]).get(remote) or 0) >= total:
                return
        except KafkaOperationError as exc:
            if not exc.retriable:  # a topic just created answers NOT_LEADER until its leader is elected
                raise
        failure = alive()
        if failure:
            raise RuntimeError(failure)
        if time.monotonic() > deadline:
            raise RuntimeError(f"{remote} not fully mirrored within {timeout_s:.0f} s")
        time.sleep(1)
