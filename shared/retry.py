"""The one way Strait waits out a failure and tries again (tenacity underneath).

Every retry loop (opening a flow, keeping a lease, following a topic, asking a busy group coordinator, waiting
for a new topic's leader, asking partition leaders for their producers) goes through here, so they share one
shape: which failures are worth another try, a delay that starts at `first_s` and doubles up to `max_s` while
the failure persists (back to `first_s` once the work made progress), a hook that hears about each failure
before the wait, and a wait that ends at once when the caller is stopping.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from tenacity import AsyncRetrying, RetryCallState, Retrying, retry_if_exception, stop_before_delay, stop_never

from shared.errors import StraitError

T = TypeVar("T")
K = TypeVar("K")
OnFailure = Callable[[BaseException, float], None]  # (what failed, seconds until the next try)


@dataclass(frozen=True, slots=True)
class Backoff:
    """Wait `first_s` after a failure, doubling up to `max_s` while failures follow each other (fixed if equal)."""

    first_s: float
    max_s: float | None = None

    def delay(self, streak: int) -> float:
        """The wait after the `streak`-th failure in a row (1 = the first)."""
        ceiling = max(self.first_s, self.max_s or 0.0)
        return min(self.first_s * 2.0 ** min(max(0, streak - 1), 32), ceiling)


def retriable_strait_error(exc: BaseException) -> bool:
    """Worth another try: a StraitError marked retriable (cluster unreachable, coordinator moving, ...)."""
    return isinstance(exc, StraitError) and exc.retriable


class _Waits:
    """tenacity's wait: `Backoff` by failures in a row, starting over when `progressed()` says work got done."""

    def __init__(self, backoff: Backoff, progressed: Callable[[], bool] | None) -> None:
        self._backoff = backoff
        self._progressed = progressed
        self._streak = 0

    def __call__(self, state: RetryCallState) -> float:
        if self._progressed is not None and self._progressed():
            self._streak = 0
        self._streak += 1
        return self._backoff.delay(self._streak)


def _only_failures(retry_on: Callable[[BaseException], bool]) -> Callable[[BaseException], bool]:
    """Never retry a cancellation or an exit (tenacity sees every BaseException)."""
    return lambda exc: isinstance(exc, Exception) and retry_on(exc)


def _report(on_failure: OnFailure | None) -> Callable[[RetryCallState], None]:
    def before_sleep(state: RetryCallState) -> None:
        failure = state.outcome.exception() if state.outcome is not None else None
        if on_failure is not None and failure is not None:
            on_failure(failure, state.upcoming_sleep)

    return before_sleep


async def retry_async(
    attempt: Callable[[], Awaitable[T]],
    *,
    backoff: Backoff,
    retry_on: Callable[[BaseException], bool] = retriable_strait_error,
    on_failure: OnFailure | None = None,
    stop: asyncio.Event | None = None,
    progressed: Callable[[], bool] | None = None,
) -> T | None:
    """`attempt()`'s result once it succeeds; None if `stop` was set first (a failure then is not raised).

    A failure `retry_on` rejects is raised at once. Without `stop`, tries until it succeeds or is cancelled.
    """

    async def sleep(seconds: float) -> None:
        if stop is None:
            await asyncio.sleep(seconds)
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), seconds)

    if stop is not None and stop.is_set():
        return None
    retrying = AsyncRetrying(
        retry=retry_if_exception(_only_failures(retry_on)),
        wait=_Waits(backoff, progressed),
        stop=(lambda _: stop.is_set()) if stop is not None else stop_never,
        sleep=sleep,
        before_sleep=_report(on_failure),
        reraise=True,
    )
    try:
        return await retrying(attempt)
    except BaseException as exc:
        if stop is not None and stop.is_set() and _only_failures(retry_on)(exc):
            return None
        raise


def retry_blocking(
    attempt: Callable[[], T],
    *,
    backoff: Backoff,
    within_s: float,
    retry_on: Callable[[BaseException], bool],
    on_failure: OnFailure | None = None,
) -> T:
    """`attempt()`'s result, trying again while `retry_on` accepts the failure and the next try starts within
    `within_s` of the first; then the last failure is raised. Blocking: for code that runs in a thread."""
    retrying = Retrying(
        retry=retry_if_exception(_only_failures(retry_on)),
        wait=_Waits(backoff, None),
        stop=stop_before_delay(within_s),
        before_sleep=_report(on_failure),
        reraise=True,
    )
    return retrying(attempt)


async def retry_rounds(
    round_: Callable[[list[K], bool], Awaitable[list[K]]], items: list[K], *, attempts: int, backoff: Backoff
) -> list[K]:
    """Run `round_(items, may_retry)` and again over the items it hands back (worth another try: a group whose
    coordinator moved), at most `attempts` rounds, waiting `backoff` between; the last round is told it may not
    retry, so it settles every item. Returns what was still handed back (empty when the last round settles all)."""
    pending = items
    for attempt in range(1, attempts + 1):
        pending = await round_(pending, attempt < attempts)
        if not pending:
            break
        if attempt < attempts:
            await asyncio.sleep(backoff.delay(attempt))
    return pending
