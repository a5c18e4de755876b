"""The executor for blocking client calls: results and errors come back, and a call under way never holds up exit."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time

import pytest

from shared.daemon_executor import DaemonThreadExecutor


def test_results_and_exceptions_reach_the_caller_and_idle_workers_are_reused() -> None:
    executor = DaemonThreadExecutor(max_workers=4)
    assert [executor.submit(pow, 2, n).result(timeout=5) for n in range(10)] == [2**n for n in range(10)]
    with pytest.raises(ZeroDivisionError):
        executor.submit(lambda: 1 / 0).result(timeout=5)
    assert len(executor._workers) == 1  # one call at a time: the one worker was reused
    executor.shutdown()
    with pytest.raises(RuntimeError, match="after shutdown"):
        executor.submit(pow, 2, 2)


def test_calls_run_side_by_side_up_to_the_limit() -> None:
    executor = DaemonThreadExecutor(max_workers=3)
    release = threading.Event()
    blocked = [executor.submit(release.wait, 10) for _ in range(5)]
    time.sleep(0.2)
    assert len(executor._workers) == 3
    assert sum(f.running() for f in blocked) == 3
    release.set()
    assert all(f.result(timeout=5) for f in blocked)
    executor.shutdown()


def test_a_process_exits_at_once_although_a_to_thread_call_it_gave_up_on_still_blocks() -> None:
    script = textwrap.dedent(
        """
        import asyncio, time
        from shared.daemon_executor import use_daemon_threads

        async def main():
            use_daemon_threads(asyncio.get_running_loop())
            call = asyncio.create_task(asyncio.to_thread(time.sleep, 60))  # a listing against a cluster gone
            await asyncio.sleep(0.2)
            call.cancel()

        asyncio.run(main())
        print("done")
        """
    )
    # With a ThreadPoolExecutor the exit would wait for the whole 60 s sleep, past this timeout.
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=50)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "done"
