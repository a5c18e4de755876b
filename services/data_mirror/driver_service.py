"""data-mirror's driver as a service under the common runner.

The driver's loop calls Spark and Kafka admin clients that block, so it keeps a thread of its own; this service
starts that thread, asks the driver to hand every task over when a stop is requested (SIGTERM, via the runner) and
waits for it, and turns a driver that fails or returns unasked into a crash (the process exits non-zero).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from services.data_mirror.driver import MirrorDriver
from shared.errors import StraitError
from shared.service import Service


class DriverService(Service):
    """Runs `MirrorDriver.run` on its own thread until stopped."""

    name = "data-mirror"
    tune_gc = False  # records never reach the driver: young-generation room would only add to its memory

    def __init__(self, driver: MirrorDriver, status_interval_s: float) -> None:
        super().__init__()
        self.driver = driver
        self._status_interval_s = status_interval_s
        self._running: asyncio.Task[None] | None = None

    async def on_start(self) -> None:
        """Start the driver's loop; it sets up the flows and starts Spark on its own (readiness says when). The
        flows' status goes out on this service's timer, as every service's does, each round on a thread (a probe
        of a cluster that stopped answering blocks)."""
        self._running = self.spawn(self._run(), "driver")
        self.every(self._status_interval_s, lambda: asyncio.to_thread(self.driver.report_status), "status")

    async def _run(self) -> None:
        await asyncio.to_thread(self.driver.run)
        if not self.stopping:
            raise StraitError("the driver's loop ended without a stop request")

    async def before_cancel(self) -> None:
        """Every task hands over and commits before the driver returns: wait for that, not a fixed time."""
        self.driver.request_stop()
        if self._running is not None:
            with contextlib.suppress(Exception):  # a failure was already recorded as this service's crash
                await self._running

    def liveness(self) -> tuple[bool, dict[str, Any]]:
        alive, details = self.driver.liveness()
        return alive and self.crashed is None, details

    def readiness(self) -> tuple[bool, dict[str, Any]]:
        return self.driver.readiness()
