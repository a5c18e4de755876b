"""HTTP load generator (asyncio; clients in http_clients) in worker processes: a fixed request rate (open loop)
or N connections each sending its next request as soon as the last answered (closed loop). Workers report every
latency and their own CPU time, so a run can tell when the client, not the server, was the limit."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from typing import Any

import httpx

from benchmarks.http_clients import session

START_DELAY_S = 1.5  # workers are spawned and import their client before the common start time
LATE_S = 0.005


@dataclass(frozen=True)
class LoadPlan:
    """What one worker does: GET `paths` chosen at random (seeded) against `base_url`."""

    base_url: str
    paths: tuple[str, ...]
    duration_s: float
    start_at: float  # time.time() when every worker starts
    seed: int
    rate: float = 0.0  # requests/s of this worker; 0 = closed loop
    connections: int = 1  # closed loop: concurrent connections; open loop: at most this many requests in flight
    client: str = "lean"  # see http_clients.session


@dataclass
class LoadResult:
    """Every request of a run, merged over its workers."""

    latencies_s: list[float] = field(default_factory=list)  # open loop: from the scheduled send time
    service_s: list[float] = field(default_factory=list)  # from the actual send time
    errors: int = 0
    wall_s: float = 0.0
    client_cpu_s: float = 0.0
    late_sends: int = 0  # open loop: requests sent more than LATE_S after their scheduled time
    statuses: dict[int, int] = field(default_factory=dict)

    @property
    def requests(self) -> int:
        """Requests answered with 200."""
        return len(self.latencies_s)

    @property
    def throughput(self) -> float:
        """Successful requests per second of wall time."""
        return self.requests / self.wall_s if self.wall_s else 0.0

    @property
    def client_cpu_share(self) -> float:
        """Client CPU seconds per wall second (1.0 = one core busy)."""
        return self.client_cpu_s / self.wall_s if self.wall_s else 0.0

    def merge(self, part: dict[str, Any]) -> None:
        """Add one worker's report."""
        self.latencies_s += part["latencies_s"]
        self.service_s += part["service_s"]
        self.errors += part["errors"]
        self.wall_s = max(self.wall_s, part["wall_s"])
        self.client_cpu_s += part["client_cpu_s"]
        self.late_sends += part["late_sends"]
        for status, count in part["statuses"].items():
            self.statuses[status] = self.statuses.get(status, 0) + count


async def _worker(plan: LoadPlan) -> dict[str, Any]:
    rng = random.Random(plan.seed)
    report: dict[str, Any] = {"latencies_s": [], "service_s": [], "errors": 0, "late_sends": 0, "statuses": {}}
    client = session(plan.client, plan.base_url, plan.connections)
    await client.open()
    try:
        loop = asyncio.get_running_loop()
        await asyncio.sleep(max(0.0, plan.start_at - time.time()))
        cpu_started, started = time.process_time(), loop.time()
        stop_at = started + plan.duration_s

        async def one(path: str, due: float) -> None:
            sent = loop.time()
            try:
                status = await client.get(path)
            except (OSError, asyncio.IncompleteReadError, ValueError, httpx.HTTPError):
                report["errors"] += 1
                return
            done = loop.time()
            report["statuses"][status] = report["statuses"].get(status, 0) + 1
            if status != 200:
                report["errors"] += 1
                return
            report["latencies_s"].append(done - due)
            report["service_s"].append(done - sent)

        if plan.rate > 0:
            tasks = []
            for i in range(int(plan.rate * plan.duration_s)):
                due = started + i / plan.rate
                delay = due - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                elif delay < -LATE_S:
                    report["late_sends"] += 1
                tasks.append(asyncio.create_task(one(rng.choice(plan.paths), due)))
            await asyncio.gather(*tasks)
        else:

            async def connection() -> None:
                while loop.time() < stop_at:
                    await one(rng.choice(plan.paths), loop.time())

            await asyncio.gather(*(connection() for _ in range(plan.connections)))
        report["wall_s"] = loop.time() - started
        report["client_cpu_s"] = time.process_time() - cpu_started
    finally:
        await client.close()
    return report


def _run_worker(plan: LoadPlan) -> dict[str, Any]:
    return asyncio.run(_worker(plan))


def run_load(
    base_url: str,
    paths: Sequence[str],
    *,
    duration_s: float,
    rate: float = 0.0,
    connections: int = 1,
    processes: int = 1,
    client: str = "lean",
    seed: int = 1,
) -> LoadResult:
    """Run the load from `processes` worker processes; the rate and the connections are split between them.

    With `rate` > 0, requests are sent on a fixed schedule whatever the answers take (latency counts from the
    scheduled time, so a slow server cannot hide queueing); with `rate` = 0 each connection loops.
    """
    start_at = time.time() + START_DELAY_S + 0.5 * processes
    plans = [
        LoadPlan(
            base_url,
            tuple(paths),
            duration_s,
            start_at,
            seed + worker,
            rate=rate / processes,
            connections=max(1, connections // processes),
            client=client,
        )
        for worker in range(processes)
    ]
    result = LoadResult()
    with ProcessPoolExecutor(max_workers=processes, mp_context=get_context("spawn")) as pool:
        for part in pool.map(_run_worker, plans):
            result.merge(part)
    return result
