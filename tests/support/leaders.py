"""Move partition leaders between live brokers (tests/support/java/MoveLeaders.java, Kafka's Admin API): the
leader change a reassignment or a rebalancer makes while every broker stays up."""

from __future__ import annotations

import json

from shared.localkafka import KafkaCluster
from tests.support.java_helper import run_java_helper


def move_leaders(cluster: KafkaCluster, topic: str, timeout_s: float = 60) -> dict[int, tuple[int, int]]:
    """Give every partition of `topic` another leader; {partition: (old leader, new leader)}."""
    args = [cluster.bootstrap_servers, topic, str(int(timeout_s * 1000))]
    stdout = run_java_helper("MoveLeaders", args, timeout_s + 60)
    moves = [json.loads(line) for line in stdout.splitlines() if line.startswith('{"partition"')]
    return {move["partition"]: (move["from"], move["to"]) for move in moves}
