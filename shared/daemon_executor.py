"""An executor for blocking client calls whose threads never hold up process exit.

Services run blocking Kafka client calls (a topic listing, an offsets fetch) on a thread, through
`asyncio.to_thread` or directly. Python joins ordinary worker threads at exit, so a call the service has
already given up on (a listing against a cluster that is gone, cancelled with the task that awaited it) would
delay the exit by the call's whole client timeout. Here the workers are daemon threads and `shutdown` never
waits for a call under way: whoever needs a call's result awaits it before stopping; nobody else does.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

_Call = tuple[Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class DaemonThreadExecutor(ThreadPoolExecutor):
    """Up to `max_workers` daemon threads, started as calls need them and reused while idle.

    A ThreadPoolExecutor only in type (asyncio's default executor must be one since Python 3.11): it shares no
    state or thread with that class, whose workers Python joins at exit.
    """

    def __init__(self, max_workers: int = 32, name: str = "blocking") -> None:
        self._calls: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._worker_limit = max_workers
        self._name = name
        self._idle = threading.Semaphore(0)
        self._workers: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._shut_down = False

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        """Schedule `fn(*args, **kwargs)`; its Future completes with the result or the exception."""
        with self._lock:
            if self._shut_down:
                raise RuntimeError("cannot schedule new calls after shutdown")
            future: Future[T] = Future()
            self._calls.put((future, fn, args, kwargs))
            if not self._idle.acquire(blocking=False) and len(self._workers) < self._worker_limit:
                thread = threading.Thread(target=self._work, name=f"{self._name}-{len(self._workers)}", daemon=True)
                thread.start()
                self._workers.append(thread)
            return future

    def _work(self) -> None:
        while (call := self._calls.get()) is not None:
            future, fn, args, kwargs = call
            if future.set_running_or_notify_cancel():
                try:
                    result = fn(*args, **kwargs)
                except BaseException as exc:  # handed to whoever awaits the future, as ThreadPoolExecutor does
                    future.set_exception(exc)
                else:
                    future.set_result(result)
            del call, future
            self._idle.release()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Refuse new calls and end idle workers; never waits for a call under way (it ends with the process)."""
        with self._lock:
            self._shut_down = True
            if cancel_futures:
                while True:
                    try:
                        call = self._calls.get_nowait()
                    except queue.Empty:
                        break
                    if call is not None:
                        call[0].cancel()
            for _ in self._workers:
                self._calls.put(None)


def use_daemon_threads(loop: asyncio.AbstractEventLoop) -> None:
    """Make `asyncio.to_thread` (the loop's default executor) use daemon threads."""
    loop.set_default_executor(DaemonThreadExecutor())
