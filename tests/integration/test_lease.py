"""One active instance per lease: a second instance stands by and takes over when the first leaves or dies."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from shared.lease import ShardLease, stable_shard
from shared.localkafka import KafkaCluster


async def _wait(predicate: Callable[[], bool], timeout_s: float = 30) -> None:
    async with asyncio.timeout(timeout_s):
        while not predicate():
            await asyncio.sleep(0.1)


async def test_single_shard_has_one_leader_and_fails_over(cluster_b: KafkaCluster, unique: str) -> None:
    props = cluster_b.client_properties()

    def make(name: str) -> ShardLease:
        return ShardLease(
            props,
            group_id=f"lease-{unique}",
            topic=f"strait.lease-{unique}.internal",
            replication_factor=1,
            instance_id=name,
        )

    first, second = make("one"), make("two")
    await first.start()
    await _wait(lambda: first.is_leader)
    await second.start()
    await asyncio.sleep(3)
    assert first.is_leader
    assert not second.is_leader
    await first.stop()
    await _wait(lambda: second.is_leader)
    assert not first.is_leader
    await second.stop()


async def test_shards_are_split_between_instances(cluster_b: KafkaCluster, unique: str) -> None:
    props = cluster_b.client_properties()
    leases = [
        ShardLease(
            props,
            group_id=f"split-{unique}",
            topic=f"strait.split-{unique}.internal",
            shards=8,
            replication_factor=1,
            instance_id=str(i),
        )
        for i in range(2)
    ]
    for lease in leases:
        await lease.start()
    await _wait(lambda: len(leases[0].owned) + len(leases[1].owned) == 8 and all(lease.owned for lease in leases))
    assert leases[0].owned.isdisjoint(leases[1].owned)
    owners = [sum(lease.owns(f"group-{g}") for lease in leases) for g in range(50)]
    assert owners == [1] * 50
    for lease in leases:
        await lease.stop()


def test_stable_shard_is_stable_and_spread() -> None:
    assert stable_shard("orders-consumers", 16) == stable_shard("orders-consumers", 16)
    assert len({stable_shard(f"g{i}", 16) for i in range(200)}) == 16
