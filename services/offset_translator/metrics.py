"""Prometheus metrics of the translator: request counts and latency per route, index size and load state."""

from __future__ import annotations

import time
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from services.offset_translator.index import TranslatorIndex
from shared.clock_skew import MAX_AHEAD_MS

_LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0)


class TranslatorMetrics:
    """The counters the request path updates."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "strait_translator_requests", "HTTP requests answered", ["route", "status"], registry=registry
        )
        self.latency = Histogram(
            "strait_translator_request_seconds",
            "time to answer an HTTP request",
            ["route"],
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )
        self.failovers = Counter(
            "strait_translator_failovers", "failover requests by outcome", ["flow", "outcome"], registry=registry
        )


class IndexCollector(Collector):
    """Index figures read at scrape time, so the feeds and the request path pay nothing for them."""

    def __init__(self, index: TranslatorIndex) -> None:
        self._index = index

    def collect(self) -> Iterator[Metric]:
        """Groups, checkpoints and load state per flow; records read, skipped and stamped ahead per topic kind."""
        groups = GaugeMetricFamily("strait_translator_index_groups", "groups with checkpoints", labels=["flow"])
        checkpoints = GaugeMetricFamily(
            "strait_translator_index_checkpoints", "group-partitions with a checkpoint", labels=["flow"]
        )
        loaded = GaugeMetricFamily(
            "strait_translator_index_loaded",
            "1 once checkpoints and offset syncs were read to their end",
            labels=["flow"],
        )
        for key, flow in self._index.flows.items():
            groups.add_metric([flow.name], self._index.checkpoints.group_count(key))
            checkpoints.add_metric([flow.name], self._index.checkpoints.checkpoint_count(key))
            done = self._index.checkpoints_loaded(key) and self._index.syncs_loaded(key)
            loaded.add_metric([flow.name], 1.0 if done else 0.0)
        read = CounterMetricFamily(
            "strait_translator_records_read", "records read from followed topics", labels=["kind"]
        )
        skipped = CounterMetricFamily(
            "strait_translator_records_skipped", "records that did not decode and were skipped", labels=["kind"]
        )
        ahead = CounterMetricFamily(
            "strait_translator_records_ahead_of_clock",
            f"heartbeats and statuses stamped more than {MAX_AHEAD_MS // 1000} s ahead of the translator's clock (not "
            "believed: a heartbeat is skipped, a status taken as stale)",
            labels=["kind"],
        )
        for kind, count in sorted(self._index.records_read.items()):
            read.add_metric([kind], count)
        for kind, count in sorted(self._index.records_skipped.items()):
            skipped.add_metric([kind], count)
        for kind, count in sorted(self._index.records_ahead.items()):
            ahead.add_metric([kind], count)
        yield from (groups, checkpoints, loaded, read, skipped, ahead)


class MetricsMiddleware:
    """Pure ASGI middleware: counts and times each HTTP request by its route template."""

    def __init__(self, app: ASGIApp, metrics: TranslatorMetrics) -> None:
        self._app = app
        self._metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on; record status and duration once the response started."""
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self._app(scope, receive, send_wrapper)
        finally:
            route = scope.get("route")
            template = getattr(route, "path", None) or "unmatched"
            self._metrics.requests.labels(template, str(status)).inc()
            self._metrics.latency.labels(template).observe(time.perf_counter() - started)
