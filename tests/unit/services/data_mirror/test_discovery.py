"""Discovery: filter-passing source topics are mirrored once their remote topic exists, up to its partitions."""

from __future__ import annotations

from services.data_mirror.discovery import MirroredTopic, discover
from shared.config import parse_mm2_config
from shared.flow_context import FlowContext

CONFIG = {
    "clusters": "A, B",
    "A.bootstrap.servers": "a:9092",
    "B.bootstrap.servers": "b:9092",
    "A->B.enabled": "true",
    "A->B.topics": "orders|payments|refunds",
}


class _Admin:
    """partition_counts from a fixed listing."""

    def __init__(self, counts: dict[str, int]) -> None:
        self.counts = counts

    def partition_counts(self) -> dict[str, int]:
        return self.counts


def test_topics_with_a_remote_topic_are_mirrored_and_the_others_wait() -> None:
    flow = parse_mm2_config(CONFIG, env={}).flow("A", "B")
    source = _Admin({"orders": 3, "payments": 2, "refunds": 1, "other": 4})
    target = _Admin({"A.orders": 3, "A.payments": 1})
    mirrored, waiting = discover(FlowContext.of(flow), source, target)  # type: ignore[arg-type]
    assert mirrored == [
        MirroredTopic(flow.name, "orders", "A.orders", 3, 3),
        MirroredTopic(flow.name, "payments", "A.payments", 1, 2),  # only what the remote topic has yet
    ]
    assert waiting == ["refunds"]
