"""PartitionsFollower: the partitions a lease owns, each read from its beginning when it is taken on."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from shared.kafka.follow import FollowedRecord, PartitionsFollower
from shared.localkafka import KafkaCluster
from tests.support.kafka_io import make_topic, produce


def test_partitions_given_up_and_taken_back_at_once_are_read_again_to_their_end(
    cluster_a: KafkaCluster, unique: str
) -> None:
    """The checkpoint service's lease can move twice within one fetch (all shards lost, then all back, when the
    target's coordinator returns): what it forgot of the partitions given up must be read again, and the follower
    must say when it has, or the flow never translates again."""
    props = cluster_a.client_properties()
    topic = f"follow-{unique}"
    make_topic(props, topic, 2)
    for partition in (0, 1):
        produce(props, topic, [(None, f"{partition}-{i}".encode()) for i in range(20)], partition=partition)
    seen: dict[int, list[bytes]] = {0: [], 1: []}

    def handle(partition: int, records: Sequence[FollowedRecord]) -> None:
        seen[partition].extend(record.value or b"" for record in records)

    async def until(what: str, check: object) -> None:
        assert callable(check)
        for _ in range(300):
            if check():
                return
            await asyncio.sleep(0.1)
        raise AssertionError(f"timed out waiting until {what}")

    async def scenario() -> None:
        follower = PartitionsFollower(props, topic, handle, poll_timeout_ms=100)
        follower.follow(frozenset({0, 1}))
        task = asyncio.create_task(follower.run())
        try:
            await until("both partitions are read", lambda: follower.caught_up and len(seen[0]) == len(seen[1]) == 20)
            follower.follow(frozenset())
            follower.follow(frozenset({0, 1}))  # taken back before the loop looked
            assert not follower.caught_up
            await until("the partitions are read again", lambda: follower.caught_up)
            assert seen == {p: [f"{p}-{i}".encode() for i in range(20)] * 2 for p in (0, 1)}
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    asyncio.run(scenario())
