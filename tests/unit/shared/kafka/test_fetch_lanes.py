"""How a source leader is fetched from its measured round trip: near, one fetch at a time of the consumer's size;
distant, several sessions at once and, unless the consumer set a size, larger per-partition fetches."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiokafka.protocol.admin import ApiVersionRequest

from shared.kafka.batch_fetcher import DEFAULT_PARTITION_FETCH_BYTES, PARTITION_BYTES_PER_S, BatchFetcher


class _Link:
    """A client whose broker answers ApiVersions after `round_trip_s`."""

    def __init__(self, round_trip_s: float) -> None:
        self.round_trip_s = round_trip_s
        self.asked = 0

    async def send(self, _node: int, request: Any) -> Any:
        assert isinstance(request, ApiVersionRequest)
        self.asked += 1
        await asyncio.sleep(self.round_trip_s)
        return object()


async def _measured(round_trip_s: float, partition_bytes: int | None) -> tuple[BatchFetcher, _Link]:
    link = _Link(round_trip_s)
    fetcher = BatchFetcher(link, max_wait_ms=100, max_bytes=50 << 20, partition_max_bytes=partition_bytes)
    assert fetcher.lanes(1) == 1  # not measured yet: as near
    for _ in range(100):
        await asyncio.sleep(0.02)
        if 1 in fetcher.round_trips:
            break
    return fetcher, link


@pytest.mark.asyncio
async def test_a_near_leader_gets_one_fetch_at_a_time_of_the_default_size() -> None:
    fetcher, link = await _measured(0.001, None)
    assert (fetcher.lanes(1), fetcher.partition_bytes(1)) == (1, DEFAULT_PARTITION_FETCH_BYTES)
    assert link.asked == 3  # measured once, the shortest of three


@pytest.mark.asyncio
async def test_a_distant_leader_gets_lanes_and_larger_partition_fetches_unless_the_consumer_set_a_size() -> None:
    fetcher, _ = await _measured(0.12, None)
    round_trip = fetcher.round_trips[1]
    assert fetcher.lanes(1) == 3
    assert fetcher.partition_bytes(1) == int(round_trip * PARTITION_BYTES_PER_S) > 10 * DEFAULT_PARTITION_FETCH_BYTES
    chosen, _ = await _measured(0.12, 2 << 20)
    assert (chosen.lanes(1), chosen.partition_bytes(1)) == (3, 2 << 20)  # max.partition.fetch.bytes as set


class _Client:
    """A client that answers every Fetch with nothing; remembers the nodes it fetched from and whether it closed."""

    def __init__(self) -> None:
        self.fetched: list[int] = []
        self.waits: list[int] = []  # each Fetch's max wait (ms)
        self.bootstrapped = self.closed = False
        self.connected: list[int] = []

    async def bootstrap(self) -> None:
        self.bootstrapped = True

    async def ready(self, node: int) -> bool:
        self.connected.append(node)
        return True

    async def send(self, node: int, request: Any) -> Any:
        if isinstance(request, ApiVersionRequest):
            return object()  # (the round trip measured when a leader is first fetched)
        self.fetched.append(node)
        self.waits.append(request._max_wait_ms)
        return type("Answer", (), {"error_code": 0, "session_id": 0, "topics": []})()

    async def close(self) -> None:
        self.closed = True


@pytest.mark.asyncio
async def test_each_lane_past_the_first_fetches_over_a_client_of_its_own() -> None:
    """A broker serves one request of a connection at a time: lanes sharing one would wait for each other's polls."""
    main, made = _Client(), []

    def lane_client() -> _Client:
        made.append(_Client())
        return made[-1]

    fetcher = BatchFetcher(main, max_wait_ms=100, max_bytes=1 << 20, partition_max_bytes=None, lane_client=lane_client)
    for lane in (0, 1, 2, 1):
        await fetcher.fetch(7, {("orders", lane): 0}, lane=lane)
    assert main.fetched == [7]
    assert [(client.bootstrapped, client.fetched) for client in made] == [(True, [7, 7]), (True, [7])]
    await fetcher.close()
    assert main.closed
    assert all(client.closed for client in made)


class _DistantClient(_Client):
    """A client whose broker answers ApiVersions after `round_trip_s` (and every Fetch with nothing)."""

    def __init__(self, round_trip_s: float) -> None:
        super().__init__()
        self.round_trip_s = round_trip_s

    async def send(self, node: int, request: Any) -> Any:
        if isinstance(request, ApiVersionRequest):
            await asyncio.sleep(self.round_trip_s)
            return object()
        return await super().send(node, request)


@pytest.mark.asyncio
async def test_a_distant_leaders_lanes_connect_as_soon_as_its_round_trip_is_known_not_at_their_first_fetch() -> None:
    main, made = _DistantClient(0.12), []

    def lane_client() -> _Client:
        made.append(_Client())
        return made[-1]

    fetcher = BatchFetcher(main, max_wait_ms=100, max_bytes=1 << 20, partition_max_bytes=None, lane_client=lane_client)
    assert fetcher.lanes(7) == 1  # starts measuring
    for _ in range(100):
        await asyncio.sleep(0.02)
        if len(made) == 2 and all(client.connected for client in made):
            break
    assert fetcher.lanes(7) == 3
    assert [(client.bootstrapped, client.connected, client.fetched) for client in made] == [(True, [7], [])] * 2
    await fetcher.fetch(7, {("orders", 1): 0}, lane=1)
    await fetcher.fetch(7, {("orders", 2): 0}, lane=2)
    assert len(made) == 2  # the lanes fetch over the clients already connected
    assert [client.fetched for client in made] == [[7], [7]]
    await fetcher.close()
    assert all(client.closed for client in made)


@pytest.mark.asyncio
async def test_a_fetch_waits_the_short_time_unless_asked_to_poll_long_and_never_less() -> None:
    """The long poll is the consumer's fetch.max.wait.ms; a setting below the short wait leaves both at it."""
    client = _Client()
    fetcher = BatchFetcher(client, max_wait_ms=100, max_bytes=1 << 20, partition_max_bytes=None, long_poll_ms=500)
    await fetcher.fetch(7, {("orders", 0): 0})
    await fetcher.fetch(7, {("orders", 0): 0}, long_poll=True)
    assert client.waits == [100, 500]
    low = _Client()
    capped = BatchFetcher(low, max_wait_ms=20, max_bytes=1 << 20, partition_max_bytes=None, long_poll_ms=20)
    await capped.fetch(7, {("orders", 0): 0}, long_poll=True)
    assert low.waits == [20]
