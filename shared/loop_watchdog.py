"""Who held the event loop: a thread that, when the loop's thread has computed for longer than a limit without
handing the loop back, logs where it is (its Python stack), so a stall in /metrics comes with the code behind it.

The loop ticks `beat()` from a short timer. The watchdog wakes every `check_s`; when the last beat is older than
`limit_s` and the loop's thread spent most of that time on its CPU (not waiting for a core), it logs the stack
once per stall, and at most once per `quiet_s`.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
import traceback

import structlog

_log = structlog.get_logger("loop-watchdog")


class LoopWatchdog:
    """Watches the thread that runs the event loop it is started on."""

    def __init__(self, *, limit_s: float = 0.1, check_s: float = 0.05, quiet_s: float = 60.0) -> None:
        self._limit_s, self._check_s, self._quiet_s = limit_s, check_s, quiet_s
        self._last_beat = time.monotonic()
        self._beats = 0
        self._stop = threading.Event()
        self._loop_thread = threading.get_ident()
        self._clock: int | None = None
        self.reports = 0

    def beat(self) -> None:
        """The loop is free: called from the loop's thread."""
        self._last_beat = time.monotonic()
        self._beats += 1

    async def run(self) -> None:
        """Beat every `check_s` on the loop and watch from a daemon thread, until cancelled."""
        self._loop_thread = threading.get_ident()
        self._clock = time.pthread_getcpuclockid(self._loop_thread)
        self._stop.clear()
        watcher = threading.Thread(target=self._watch, name="loop-watchdog", daemon=True)
        watcher.start()
        try:
            while True:
                self.beat()
                await asyncio.sleep(self._check_s)
        finally:
            self._stop.set()

    def _watch(self) -> None:
        reported_beat = -1
        quiet_until = 0.0
        cpu_at_beat, beat_seen = self._cpu(), self._beats
        while not self._stop.wait(self._check_s):
            if self._beats != beat_seen:
                cpu_at_beat, beat_seen = self._cpu(), self._beats
                continue
            held_s = time.monotonic() - self._last_beat
            computing_s = self._cpu() - cpu_at_beat
            now = time.monotonic()
            if held_s < self._limit_s or computing_s < self._limit_s / 2 or beat_seen == reported_beat:
                continue
            if now < quiet_until:
                continue
            reported_beat, quiet_until = beat_seen, now + self._quiet_s
            self.reports += 1
            frame = sys._current_frames().get(self._loop_thread)
            stack = "".join(traceback.format_stack(frame)[-12:]) if frame is not None else "(no frame)"
            _log.warning(
                "event_loop_held", held_ms=round(held_s * 1000), computing_ms=round(computing_s * 1000), stack=stack
            )

    def _cpu(self) -> float:
        return time.clock_gettime(self._clock) if self._clock is not None else 0.0
