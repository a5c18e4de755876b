"""The lifecycle base every asyncio service and every unit inside one uses: start, background tasks, periodic
work, child units, prompt stop.

Invariants: `stop()` is idempotent; a background task that crashes stops the service and is reported
by `crashed`, so the process exits non-zero; a child unit that crashes stops its parent the same way, at once;
periodic work waits on the stop event, never sleeps blindly.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Self

import structlog

from shared.errors import StraitError

Interval = float | Callable[[], float]


class Service:
    """Subclasses implement `on_start` (I/O, spawn tasks) and `on_stop` (drain, commit, close in reverse)."""

    name: str = "service"
    tune_gc: bool = True  # the runner sets `gc_tuning`'s thresholds for services that handle records in process
    serves_own_http: bool = False  # True: /metrics, /health and /ready are the service's own, not the runner's

    def __init__(self) -> None:
        self.log = structlog.get_logger(self.name)
        self._stop_requested = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._children: list[Service] = []
        self._on_crash: Callable[[BaseException], None] | None = None  # the parent's, for a child unit
        self._started = False
        self._stopped = False
        self.crashed: BaseException | None = None
        self.started_at = 0.0
        self.last_error: str | None = None

    # -- lifecycle -------------------------------------------------------------------------------
    async def start(self) -> None:
        """Do the start-up I/O and start background tasks."""
        self.started_at = time.time()
        self._started = True
        await self.on_start()

    async def stop(self) -> None:
        """Stop child units and background tasks, then let the subclass drain, commit and close. Safe to call twice.

        Every child is asked to stop at once (so they drain side by side), then each is stopped, last started first.
        """
        if self._stopped:
            return
        self._stopped = True
        self._stop_requested.set()
        for child in self._children:
            child.request_stop()
        await self.before_cancel()
        for child in reversed(self._children):
            await child.stop()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.on_stop()

    async def on_start(self) -> None:
        """Start-up I/O; override."""

    async def before_cancel(self) -> None:
        """Runs after stop is requested but before tasks are cancelled: stop fetching, drain (bounded)."""

    async def on_stop(self) -> None:
        """Commit, flush and close clients in reverse order of opening; override."""

    def request_stop(self) -> None:
        """Ask the service to stop (what SIGTERM does); `run_until_stopped` then returns."""
        self._stop_requested.set()

    @property
    def stopping(self) -> bool:
        """True once a stop was requested."""
        return self._stop_requested.is_set()

    async def run_until_stopped(self) -> None:
        """Wait until a stop is requested or a background task crashed."""
        await self._stop_requested.wait()

    async def wait_stop(self, timeout_s: float) -> bool:
        """Wait up to `timeout_s` for a stop request; True if one came."""
        try:
            await asyncio.wait_for(self._stop_requested.wait(), timeout=max(0.0, timeout_s))
        except TimeoutError:
            return False
        return True

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- child units and background work ---------------------------------------------------------
    async def start_child(self, child: Service) -> None:
        """Start `child` as a part of this service: it stops when this service stops, and its crash stops this one."""
        child._on_crash = self._child_crashed
        self._children.append(child)
        await child.start()

    def _child_crashed(self, exc: BaseException) -> None:
        self._crash(exc, "child_unit_crashed")

    def _crash(self, exc: BaseException, what: str, **where: str) -> None:
        if self.crashed is not None:
            return
        self.crashed = exc
        self.log.error(what, error=repr(exc), exc_info=exc, **where)
        self._stop_requested.set()
        if self._on_crash is not None:
            self._on_crash(exc)

    def spawn(self, coro: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        """Run `coro` in the background; if it raises, the service stops and reports the crash."""
        task = asyncio.create_task(coro, name=f"{self.name}:{name}")
        task.add_done_callback(self._on_task_done)
        self._tasks.append(task)
        return task

    def _on_task_done(self, task: asyncio.Task[None]) -> None:
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            self._crash(exc, "background_task_crashed", task=task.get_name())

    def every(self, interval_s: Interval, work: Callable[[], Awaitable[None]], name: str) -> asyncio.Task[None]:
        """Run `work` now and then every `interval_s` in a background task of its own (see `periodically`)."""
        return self.spawn(self.periodically(interval_s, work, name), name)

    async def periodically(self, interval_s: Interval, work: Callable[[], Awaitable[None]], name: str) -> None:
        """Run `work` now and then every `interval_s` (a number or a callable read after each round, counted from
        the round's start) until stopping, in the caller's task: a unit whose stop lets its running round finish
        runs its timers this way inside its main task.

        A retriable StraitError is logged and counted, and the next round tries again; anything else
        propagates (from a spawned task: crashes the service).
        """
        while not self.stopping:
            started = time.monotonic()
            try:
                await work()
            except StraitError as exc:
                if not exc.retriable:
                    raise
                self.record_error(name, exc)
            interval = interval_s() if callable(interval_s) else interval_s
            await self.wait_stop(interval - (time.monotonic() - started))

    def record_error(self, where: str, exc: BaseException) -> None:
        """Remember and log a recoverable error (status and metrics read `last_error`)."""
        self.last_error = f"{where}: {exc}"
        self.log.warning("recoverable_error", where=where, error=str(exc), error_type=type(exc).__name__)

    # -- health ----------------------------------------------------------------------------------
    def listening(self) -> dict[str, Any]:
        """Where the service itself accepts requests, for its start log (none by default)."""
        return {}

    def liveness(self) -> tuple[bool, dict[str, Any]]:
        """Alive unless a background task crashed."""
        return self.crashed is None, {"service": self.name}

    def readiness(self) -> tuple[bool, dict[str, Any]]:
        """Ready once started and not stopping; subclasses add their own conditions."""
        ready = self._started and not self.stopping and self.crashed is None
        return ready, {"service": self.name, "last_error": self.last_error}
