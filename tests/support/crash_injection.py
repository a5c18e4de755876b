"""Run a service's entry point with a crash injected: `python -m tests.support.crash_injection services.X ARGS`.

The service is built and run by the real runner; once it has started, a background task of the service raises
after STRAIT_TEST_CRASH_AFTER_S seconds, as an unexpected bug in its work would. What the process then does
(log, final status, exit code) is the runner's and the lifecycle's, not this module's.
"""

from __future__ import annotations

import asyncio
import os
import runpy
import sys
from collections.abc import Callable
from typing import Any

import shared.runner
from shared.service import Service

ENV = "STRAIT_TEST_CRASH_AFTER_S"


class InjectedCrash(RuntimeError):
    """The failure this module injects (named in the service's crash log)."""


def _armed(build: Callable[..., Service], delay_s: float) -> Callable[..., Service]:
    def build_then_arm(*args: Any) -> Service:
        service = build(*args)
        start = service.on_start

        async def on_start() -> None:
            await start()
            service.spawn(_crash_after(delay_s), "injected-crash")

        service.on_start = on_start  # type: ignore[method-assign]
        return service

    return build_then_arm


async def _crash_after(delay_s: float) -> None:
    await asyncio.sleep(delay_s)
    raise InjectedCrash(f"injected by the test after {delay_s:g} s")


def main() -> None:
    module = sys.argv.pop(1)
    delay_s = float(os.environ[ENV])
    run_service = shared.runner.run_service

    def run_armed(prog: str, build: Callable[..., Service], *args: Any, **kwargs: Any) -> None:
        run_service(prog, _armed(build, delay_s), *args, **kwargs)

    shared.runner.run_service = run_armed
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
