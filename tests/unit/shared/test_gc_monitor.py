"""Garbage-collection pauses are timed per generation, so an event-loop stall can be told apart from a collection."""

from __future__ import annotations

import gc

from prometheus_client import CollectorRegistry

from shared.gc_monitor import GcPauseMonitor


def _count(registry: CollectorRegistry, generation: str) -> float:
    return registry.get_sample_value("strait_gc_pause_seconds_count", {"generation": generation}) or 0.0


def test_a_full_collection_is_counted_under_generation_2_with_its_pause() -> None:
    registry = CollectorRegistry()
    monitor = GcPauseMonitor(registry).install()
    try:
        kept = [[index] for index in range(200_000)]  # something for a full collection to walk
        gc.collect()
        gc.collect(0)
    finally:
        monitor.uninstall()
    assert _count(registry, "2") >= 1
    assert _count(registry, "0") >= 1
    assert monitor.worst_s > 0
    assert registry.get_sample_value("strait_gc_pause_max_seconds") == monitor.worst_s
    assert len(kept) == 200_000


def test_once_uninstalled_collections_are_no_longer_counted() -> None:
    registry = CollectorRegistry()
    monitor = GcPauseMonitor(registry).install()
    monitor.install()  # twice is once
    gc.collect()
    monitor.uninstall()
    counted = _count(registry, "2")
    gc.collect()
    assert counted == 1
    assert _count(registry, "2") == counted
