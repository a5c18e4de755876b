"""Section 3: from creating a new source topic to its first record on the target, default and tuned settings."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from benchmarks.console import say
from benchmarks.contenders import MM2, STRAIT, TOOLS, MirrorSetup, open_mirror
from benchmarks.findings import discovery_notes
from benchmarks.lab import EndOffsets, Lab, make_topics, wait_until
from benchmarks.model import BenchOptions, Section
from benchmarks.tables import best_median, median
from shared.config.flow_settings import FlowSettings
from shared.kafka.factories import confluent_producer

KEY = "discovery"
TUNED_REFRESH_S = 1  # the shortest interval either tool's config takes (whole seconds)
MM2_DEFAULT_REFRESH_S = 600
START_TIMEOUT_S = 240
PAUSE_S = 1.5  # between new topics, so each lands at a different point of the refresh cycle


@dataclass(frozen=True)
class Mode:
    """A setting of `refresh.topics.interval.seconds` (None: each tool's default) and the wait cap per tool."""

    name: str
    refresh_s: int | None
    caps_s: dict[str, float]


@dataclass(frozen=True)
class Probe:
    """One new topic: seconds to its first record on the target, None if not seen within the cap."""

    tool: str
    mode: str
    seconds: float | None
    cap_s: float

    def as_dict(self) -> dict[str, Any]:
        """Plain data for the raw samples."""
        return {"tool": self.tool, "settings": self.mode, "seconds": self.seconds, "cap_s": self.cap_s}


def modes(quick: bool) -> list[Mode]:
    """Default settings (MM2's 600 s refresh is capped) and both tools tuned to the same short interval."""
    strait_default = FlowSettings().refresh_topics_interval_s
    mm2_cap, cap = (20.0, 30.0) if quick else (90.0, 60.0)
    return [
        Mode(
            f"defaults (Strait {strait_default} s, MM2 {MM2_DEFAULT_REFRESH_S} s refresh)",
            None,
            {STRAIT: cap, MM2: mm2_cap},
        ),
        Mode(
            f"tuned: refresh.topics.interval.seconds={TUNED_REFRESH_S} for both",
            TUNED_REFRESH_S,
            {STRAIT: cap, MM2: cap},
        ),
    ]


def run(options: BenchOptions, lab: Lab) -> Section:
    """For each setting: Strait, then MM2, each creating `repeats` new topics one after another."""
    topics_per_run = 1 if options.quick else options.repeats
    probes: list[Probe] = []
    for mode in modes(options.quick):
        for tool in TOOLS:
            probes += probe_new_topics(lab, tool, mode, topics_per_run)
    rows = []
    medians: dict[tuple[str, str], float | None] = {}
    caps: dict[tuple[str, str], float] = {}
    for mode in modes(options.quick):
        for tool in TOOLS:
            mine = [p for p in probes if p.tool == tool and p.mode == mode.name]
            seen = [p.seconds for p in mine if p.seconds is not None]
            missed = [p for p in mine if p.seconds is None]
            medians[(mode.name, tool)] = median(seen) if seen and not missed else None
            caps[(mode.name, tool)] = mode.caps_s[tool]
            cell = best_median(seen, 1) if seen else f"> {mode.caps_s[tool]:.0f} (cap)"
            if seen and missed:
                cell += f"; {len(missed)} not within {mode.caps_s[tool]:.0f} s"
            rows.append([mode.name, tool, cell, str(len(mine))])
    return Section(
        key=KEY,
        title="3. Discovery of a new topic",
        method=(
            "Per tool and setting, a fresh flow whose topic pattern matches a warm-up topic that exists before the "
            "tool starts; once the warm-up topic's record reaches the target (the tool is fully running), new "
            f"topics are created one after another ({PAUSE_S:g} s apart), each with one record produced right after "
            "creation. Each time is from the create call to the first poll (every 100 ms) that sees the record on "
            "the target. A topic not seen within the cap is reported as `> cap` and ends that run (a longer wait "
            f"would only measure the refresh timer): MM2's default refresh is {MM2_DEFAULT_REFRESH_S} s, counted "
            "from its start, so its default case is bounded only by the cap. Strait discovers through topic-sync "
            "(creates the remote topic and announces it on the control topic, which data-mirror follows, handing "
            "the new partitions to their slots) and data-mirror's own refresh. Cells are *best / median* seconds."
        ),
        headers=["settings", "tool", "create → first record on target (s)", "new topics"],
        rows=rows,
        settings={mode.name: _describe(mode) for mode in modes(options.quick)},
        raw={"probes": [p.as_dict() for p in probes]},
        notes=discovery_notes(medians, caps),
    )


def _describe(mode: Mode) -> str:
    setting = "unset (each tool's default)" if mode.refresh_s is None else f"{mode.refresh_s} s for both"
    caps = ", ".join(f"{tool} {cap:.0f} s" for tool, cap in mode.caps_s.items())
    return f"refresh.topics.interval.seconds {setting}; wait cap: {caps}"


def probe_new_topics(lab: Lab, tool: str, mode: Mode, count: int) -> list[Probe]:
    """Start `tool` on a fresh flow, then time `count` new topics (stops at the first one past the cap)."""
    source_alias, target_alias = lab.aliases()
    prefix = f"bench-disc-{source_alias}-"
    setup = MirrorSetup(source_alias, target_alias, f"{prefix}.*", lab.options.tasks, refresh_topics_s=mode.refresh_s)
    run_dir = lab.run_dir(f"{source_alias}-{tool.lower()}-discovery")
    mirror = open_mirror(tool, setup, lab.source, lab.target, run_dir)
    source_admin = lab.source_admin()
    producer = confluent_producer(lab.source.client_properties(), **{"linger.ms": 0})
    make_topics(source_admin, [f"{prefix}warm"], 1)
    _produce_one(producer, f"{prefix}warm")
    probes: list[Probe] = []
    cap = mode.caps_s[tool]
    say(f"{tool}: discovery, {mode.name}")
    try:
        mirror.start()
        _wait_for_record(lab, f"{source_alias}.{prefix}warm", START_TIMEOUT_S, mirror.alive, tool)
        for index in range(count):
            time.sleep(PAUSE_S)
            topic = f"{prefix}{index}"
            began = time.monotonic()
            make_topics(source_admin, [topic], 1)
            _produce_one(producer, topic)
            try:
                _wait_for_record(lab, f"{source_alias}.{topic}", cap - (time.monotonic() - began), mirror.alive, tool)
            except TimeoutError:
                probes.append(Probe(tool, mode.name, None, cap))
                say(f"{tool}: {topic} not on the target within {cap:.0f} s")
                break
            probes.append(Probe(tool, mode.name, time.monotonic() - began, cap))
            say(f"{tool}: {topic} on the target after {probes[-1].seconds:.1f} s")
    finally:
        mirror.stop()
    return probes


def _produce_one(producer: Any, topic: str) -> None:
    producer.produce(topic, value=b"first")
    if producer.flush(30):
        raise RuntimeError(f"could not produce to {topic}")


def _wait_for_record(lab: Lab, remote: str, timeout_s: float, alive: Any, tool: str) -> None:
    probe = EndOffsets(lab.target.client_properties(), remote, 1)

    def arrived() -> bool:
        if not alive():
            raise RuntimeError(f"{tool} exited while waiting for {remote}")
        return probe.total() > 0

    try:
        wait_until(arrived, max(0.1, timeout_s), f"the first record of {remote}", 0.1)
    finally:
        probe.close()
