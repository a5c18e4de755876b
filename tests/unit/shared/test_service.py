"""The service base: prompt, idempotent stop; crashes stop the service; periodic work survives retriable errors."""

from __future__ import annotations

import asyncio
import time

import pytest

from shared.errors import KafkaOperationError, StraitError
from shared.service import Service


class Recorder(Service):
    name = "recorder"

    def __init__(self) -> None:
        super().__init__()
        self.events: list[str] = []

    async def on_start(self) -> None:
        self.events.append("start")

    async def before_cancel(self) -> None:
        self.events.append("drain")

    async def on_stop(self) -> None:
        self.events.append("close")


async def test_stop_is_idempotent_and_ordered() -> None:
    service = Recorder()
    await service.start()
    await service.stop()
    await service.stop()
    assert service.events == ["start", "drain", "close"]


async def test_periodic_work_stops_promptly_even_with_a_long_interval() -> None:
    runs = 0

    async def work() -> None:
        nonlocal runs
        runs += 1

    async with Recorder() as service:
        service.every(3600, work, "slow")
        await asyncio.sleep(0.05)
        began = time.monotonic()
    assert runs == 1
    assert time.monotonic() - began < 60, "stopped without waiting out the hour"


async def test_retriable_errors_are_recorded_and_the_work_continues() -> None:
    calls = 0

    async def flaky() -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise KafkaOperationError("broker away", operation="list topics", retriable=True)

    async with Recorder() as service:
        service.every(0.01, flaky, "flaky")
        async with asyncio.timeout(5):
            while calls < 3:
                await asyncio.sleep(0.01)
        assert service.crashed is None
        assert service.last_error == "flaky: broker away"


async def test_a_crashing_task_stops_the_service_and_is_reported() -> None:
    async def broken() -> None:
        raise StraitError("cannot continue")

    service = Recorder()
    await service.start()
    service.every(0.01, broken, "broken")
    async with asyncio.timeout(5):
        await service.run_until_stopped()
    await service.stop()
    assert isinstance(service.crashed, StraitError)
    assert service.liveness()[0] is False
    assert service.readiness()[0] is False


async def test_readiness_follows_the_lifecycle() -> None:
    service = Recorder()
    assert service.readiness()[0] is False
    await service.start()
    assert service.readiness()[0] is True
    service.request_stop()
    assert service.readiness()[0] is False
    await service.stop()


@pytest.mark.parametrize("interval", [0.01, lambda: 0.01])
async def test_interval_may_be_a_callable(interval: float) -> None:
    seen = 0

    async def work() -> None:
        nonlocal seen
        seen += 1

    async with Recorder() as service:
        service.every(interval, work, "w")
        async with asyncio.timeout(5):
            while seen < 3:
                await asyncio.sleep(0.01)


async def test_a_crashing_child_unit_stops_its_parent_at_once() -> None:
    async def broken() -> None:
        raise StraitError("offset syncs follower failed")

    parent, child = Recorder(), Recorder()
    await parent.start()
    await parent.start_child(child)
    child.spawn(broken(), "follower")
    async with asyncio.timeout(5):
        await parent.run_until_stopped()
    assert isinstance(parent.crashed, StraitError)
    assert parent.liveness()[0] is False
    await parent.stop()
    assert child.events == ["start", "drain", "close"]


async def test_stop_drains_every_child_together_then_closes_them_last_started_first() -> None:
    closed: list[str] = []

    class Unit(Recorder):
        def __init__(self, label: str) -> None:
            super().__init__()
            self.label = label
            self.asked_while_draining: list[bool] = []

        async def before_cancel(self) -> None:
            self.asked_while_draining.append(all(unit.stopping for unit in units))

        async def on_stop(self) -> None:
            closed.append(self.label)

    units = [Unit("first"), Unit("second")]
    parent = Recorder()
    await parent.start()
    for unit in units:
        await parent.start_child(unit)
    await parent.stop()
    assert closed == ["second", "first"]
    assert [unit.asked_while_draining for unit in units] == [[True], [True]]
    assert parent.events == ["start", "drain", "close"]
