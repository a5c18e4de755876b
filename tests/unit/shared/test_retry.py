"""The shared retry helper: which failures are retried, how long it waits, and that a stop ends the waiting."""

from __future__ import annotations

import asyncio
import time

import pytest

from shared.errors import ConfigError, KafkaOperationError
from shared.retry import Backoff, retry_async, retry_blocking, retry_rounds


def unreachable() -> KafkaOperationError:
    return KafkaOperationError("cluster B unreachable", operation="open", retriable=True)


def test_backoff_doubles_up_to_its_ceiling_and_is_fixed_without_one() -> None:
    assert [Backoff(1, 5).delay(n) for n in range(1, 6)] == [1, 2, 4, 5, 5]
    assert [Backoff(2).delay(n) for n in range(1, 4)] == [2, 2, 2]


async def test_retriable_failures_are_reported_and_tried_again_until_success() -> None:
    calls: list[int] = []
    heard: list[tuple[str, float]] = []

    async def attempt() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise unreachable()
        return "open"

    result = await retry_async(
        attempt, backoff=Backoff(0.01, 0.02), on_failure=lambda exc, wait: heard.append((str(exc), wait))
    )
    assert result == "open"
    assert heard == [("cluster B unreachable", 0.01), ("cluster B unreachable", 0.02)]


async def test_a_failure_that_is_not_retriable_is_raised_at_once() -> None:
    calls = 0

    async def attempt() -> None:
        nonlocal calls
        calls += 1
        raise ConfigError("replication.factor must be positive", value="0")

    with pytest.raises(ConfigError):
        await retry_async(attempt, backoff=Backoff(0.01))
    assert calls == 1


async def test_a_stop_ends_the_wait_at_once_and_returns_none() -> None:
    stop = asyncio.Event()

    async def attempt() -> str:
        asyncio.get_running_loop().call_later(0.05, stop.set)
        raise unreachable()

    began = time.monotonic()
    assert await retry_async(attempt, backoff=Backoff(3600), stop=stop) is None
    assert time.monotonic() - began < 60, "the stop ended the hour's wait"


async def test_the_delay_starts_over_after_the_work_made_progress() -> None:
    waits: list[float] = []
    progress = iter([False, False, True, False])

    async def attempt() -> None:
        if len(waits) == 4:
            return
        raise unreachable()

    await retry_async(
        attempt,
        backoff=Backoff(0.001, 0.1),
        progressed=lambda: next(progress),
        on_failure=lambda exc, wait: waits.append(wait),
    )
    assert waits == [0.001, 0.002, 0.001, 0.002]


def test_blocking_retries_stop_before_the_deadline_and_raise_the_last_failure() -> None:
    calls = 0

    def attempt() -> None:
        nonlocal calls
        calls += 1
        raise unreachable()

    began = time.monotonic()
    with pytest.raises(KafkaOperationError, match="unreachable"):
        retry_blocking(attempt, backoff=Backoff(0.05), within_s=0.5, retry_on=lambda exc: True)
    assert 2 <= calls <= 11  # tried again, and no more often than the waits allow within the deadline
    assert time.monotonic() - began < 30  # (generous: a loaded machine is slow, not endless)


async def test_a_cancellation_is_never_retried() -> None:
    started = asyncio.Event()

    async def attempt() -> None:
        started.set()
        await asyncio.sleep(3600)

    task = asyncio.create_task(retry_async(attempt, backoff=Backoff(0.01), retry_on=lambda exc: True))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 5)


async def test_rounds_ask_again_only_for_what_is_handed_back_and_the_last_round_may_not_retry() -> None:
    seen: list[tuple[list[str], bool]] = []

    async def round_(items: list[str], may_retry: bool) -> list[str]:
        seen.append((items, may_retry))
        return [item for item in items if item.startswith("moved")] if may_retry else []

    left = await retry_rounds(round_, ["a", "moved-1", "moved-2"], attempts=3, backoff=Backoff(0.01))

    assert left == []
    assert seen == [
        (["a", "moved-1", "moved-2"], True),
        (["moved-1", "moved-2"], True),
        (["moved-1", "moved-2"], False),
    ]


async def test_rounds_stop_as_soon_as_nothing_is_handed_back() -> None:
    calls = 0

    async def round_(items: list[str], may_retry: bool) -> list[str]:
        nonlocal calls
        calls += 1
        return []

    assert await retry_rounds(round_, ["a"], attempts=5, backoff=Backoff(10.0)) == []
    assert calls == 1
