"""A timeline of what happened during a soak run (faults, crashes, phases), printed as it happens."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime


@dataclass(frozen=True)
class Event:
    """One entry: seconds since traffic started, the wall-clock time, what kind, what exactly, how long it took."""

    at_s: float
    wall: str
    kind: str
    detail: str
    took_s: float = 0.0


class EventLog:
    """Thread-safe list of events; `faults()` are the injected ones, `surprises()` what nobody asked for."""

    FAULT_KINDS = frozenset({"broker-kill", "broker-restart", "broker-pause", "service-kill"})
    SURPRISE_KINDS = frozenset({"service-exit", "broker-exit", "broker-not-ready", "producer-fatal"})

    def __init__(self) -> None:
        self.origin = time.monotonic()
        self._events: list[Event] = []
        self._lock = threading.Lock()

    def restart_clock(self) -> None:
        """Count seconds from now on (called when traffic starts); earlier events get negative times."""
        now = time.monotonic()
        shift = now - self.origin
        with self._lock:
            self._events = [replace(event, at_s=round(event.at_s - shift, 1)) for event in self._events]
        self.origin = now

    def elapsed_s(self) -> float:
        """Seconds since the clock started."""
        return time.monotonic() - self.origin

    def record(self, kind: str, detail: str, took_s: float = 0.0, *, at_s: float | None = None) -> Event:
        """Append an event and print it as one line."""
        event = Event(
            at_s=round(self.elapsed_s() if at_s is None else at_s, 1),
            wall=datetime.now(UTC).strftime("%H:%M:%S"),
            kind=kind,
            detail=detail,
            took_s=round(took_s, 1),
        )
        with self._lock:
            self._events.append(event)
        took = f" ({event.took_s:.1f}s)" if took_s else ""
        print(f"[soak {event.wall} t={event.at_s:7.1f}s] {kind}: {detail}{took}", flush=True)
        return event

    def all(self) -> list[Event]:
        """Every event so far, oldest first."""
        with self._lock:
            return list(self._events)

    def faults(self) -> list[Event]:
        """The injected faults."""
        return [event for event in self.all() if event.kind in self.FAULT_KINDS]

    def surprises(self) -> list[Event]:
        """Crashes and outages that were not injected."""
        return [event for event in self.all() if event.kind in self.SURPRISE_KINDS]
