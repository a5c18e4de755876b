"""FastAPI dependencies as `Annotated` aliases: index, clock, failover executor, metrics, settings, path params.

They are `async def` on purpose: FastAPI runs plain functions in a thread pool, a hop the hot path cannot afford.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from fastapi import Depends, Path, Request

from services.offset_translator.failover import FailoverExecutor
from services.offset_translator.index import TranslatorIndex
from services.offset_translator.metrics import TranslatorMetrics
from services.offset_translator.settings import TranslatorSettings


async def _index(request: Request) -> TranslatorIndex:
    index: TranslatorIndex = request.app.state.index
    return index


async def _now_ms(request: Request) -> int:
    clock: Callable[[], int] = request.app.state.clock
    return clock()


async def _failover(request: Request) -> FailoverExecutor:
    executor: FailoverExecutor = request.app.state.failover
    return executor


async def _settings(request: Request) -> TranslatorSettings:
    settings: TranslatorSettings = request.app.state.settings
    return settings


async def _metrics(request: Request) -> TranslatorMetrics:
    metrics: TranslatorMetrics = request.app.state.metrics
    return metrics


IndexDep = Annotated[TranslatorIndex, Depends(_index)]
NowMs = Annotated[int, Depends(_now_ms)]
FailoverDep = Annotated[FailoverExecutor, Depends(_failover)]
MetricsDep = Annotated[TranslatorMetrics, Depends(_metrics)]
SettingsDep = Annotated[TranslatorSettings, Depends(_settings)]
Source = Annotated[str, Path(description="alias of the source cluster", examples=["A"])]
Target = Annotated[str, Path(description="alias of the target cluster", examples=["B"])]
Cluster = Annotated[str, Path(description="a cluster alias of the config", examples=["B"])]
