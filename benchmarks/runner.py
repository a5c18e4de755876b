"""Run the selected sections in order; a section that fails is reported as such, never stops the others.

Sections 1-3 share one pair of clusters (the lab) and section 8 is computed from what 1 and 2 sampled; section 1b
verifies section 1's copies, or, chosen without it, makes copies of its own in the lab (`verify_alone`);
sections 4 to 7 live in their own modules (`run(options) -> Section`) and start whatever they need.
"""

from __future__ import annotations

import importlib
import time
import traceback
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from benchmarks import (
    discovery,
    exactly_once,
    latency,
    resources,
    scale,
    spark_spread,
    throughput,
    transforms,
    verify_alone,
    verify_speed,
    wan,
)
from benchmarks.console import say
from benchmarks.lab import Lab, open_lab
from benchmarks.model import BenchOptions, Section
from benchmarks.report import Outcome
from benchmarks.usage import Usage
from benchmarks.verify_speed import Verification

TITLES = {
    "throughput": "1. Throughput",
    "verify": "1b. Verifying a copy (strait verify)",
    "latency": "2. Latency at 10k records/s",
    "discovery": "3. Discovery of a new topic",
    "failover": "4. Failover precision",
    "translator": "5. Offset translator under load",
    "checkpoint": "6. Checkpoint lag after a commit",
    "checkpoint_scale": "7. Checkpoints at 10,000 groups",
    "resources": "8. Resources",
    "scale": "9. Real size: 12 to 4,000 partitions",
    "cluster": "10. Spread over a Spark cluster",
    "wan": "11. A distant source (50 and 150 ms round trip)",
    "transforms": "12. A flow with a transform (Filter, InsertHeader, DropHeaders)",
    "exactly_once": exactly_once.TITLE,
}
CHOICES = (
    "throughput",
    "verify",
    "latency",
    "discovery",
    "failover",
    "translator",
    "checkpoint",
    "checkpoint_scale",
    "scale",
    "cluster",
    "wan",
    "transforms",
    "exactly_once",
)
LAB_SECTIONS: dict[str, Callable[[BenchOptions, Lab], Section]] = {
    "throughput": throughput.run,
    "latency": latency.run,
    "discovery": discovery.run,
    "scale": scale.run,
    "cluster": spark_spread.run,
    "wan": wan.run,
    "transforms": transforms.run,
    "exactly_once": exactly_once.run,
}
EXTERNAL = {
    "failover": "benchmarks.failover_precision",
    "translator": "benchmarks.translator_load",
    "checkpoint": "benchmarks.checkpoint_lag",
    "checkpoint_scale": "benchmarks.checkpoint_scale",
}


def parse_only(text: str) -> list[str]:
    """`--only a,b` -> selected keys in report order; empty: every section. Unknown names raise ValueError."""
    wanted = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [name for name in wanted if name not in CHOICES]
    if unknown:
        raise ValueError(f"unknown section(s) {', '.join(unknown)}; choose from {', '.join(CHOICES)}")
    chosen = set(wanted or CHOICES)
    if chosen & {"throughput", "latency"}:
        chosen.add("resources")  # measured during those runs, at no extra cost
    if "throughput" in chosen:
        chosen.add("verify")  # each throughput copy is verified before its remote topic is deleted
    return [key for key in TITLES if key in chosen]


def run_sections(options: BenchOptions, selected: Sequence[str], *, profile: bool) -> list[Outcome]:
    """Every selected section's outcome, in report order."""
    outcomes: dict[str, Outcome] = {}
    usage: list[Usage] = []
    verifications: list[Verification] = []
    alone = "verify" in selected and "throughput" not in selected  # then section 1b makes its own copies
    in_lab = [key for key in selected if key in LAB_SECTIONS or (key == "verify" and alone)]
    verify_profile: dict[str, Any] | None = None
    if in_lab:
        began = time.monotonic()
        try:
            say("starting the source and target clusters")
            with open_lab(options, profile=profile) as lab:
                for key in in_lab:
                    body = verify_alone.run if key == "verify" else LAB_SECTIONS[key]
                    outcomes[key] = attempt(key, partial(body, options, lab))
                usage = list(lab.usage)
                verifications = list(lab.verifications)
                verify_profile = lab.verify_profile
        except Exception as exc:  # the clusters did not start (or stop): every lab section is unmeasured
            for key in in_lab:
                outcomes.setdefault(key, _failed(key, time.monotonic() - began, exc))
    if "verify" in selected and "verify" not in outcomes:
        outcomes["verify"] = attempt("verify", partial(verify_speed.run, options, verifications, verify_profile))
    if "resources" in selected:
        if usage:
            outcomes["resources"] = attempt("resources", partial(resources.run, options, usage))
        else:
            outcomes["resources"] = Outcome(
                "resources", TITLES["resources"], 0.0, error="no throughput or latency run finished to sample"
            )
    for key in selected:
        if key in EXTERNAL:
            outcomes[key] = attempt(key, partial(_external, key, options))
    return [outcomes[key] for key in TITLES if key in outcomes]


def attempt(key: str, body: Callable[[], Section]) -> Outcome:
    """Run one section; its failure becomes an outcome with the error and traceback."""
    say(f"section {TITLES[key]}: start")
    began = time.monotonic()
    try:
        section = body()
    except Exception as exc:
        outcome = _failed(key, time.monotonic() - began, exc)
        say(f"section {TITLES[key]}: FAILED: {outcome.error}")
        return outcome
    say(f"section {TITLES[key]}: done in {time.monotonic() - began:.0f} s")
    return Outcome(key, _numbered(key, section.title), time.monotonic() - began, section=section)


def _numbered(key: str, title: str) -> str:
    """The section's own title with its number in the report ("5. ..."), as the headings go."""
    number = TITLES[key].split(" ", 1)[0]
    return title if title.startswith(number) else f"{number} {title or TITLES[key].split(' ', 1)[1]}"


def _external(key: str, options: BenchOptions) -> Section:
    name = EXTERNAL[key]
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name == name:
            raise RuntimeError(f"module {name} does not exist yet") from None
        raise
    section: Section = module.run(options)
    return section


def _failed(key: str, seconds: float, exc: BaseException) -> Outcome:
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    detail = "".join(traceback.format_exception(exc))[-6000:]
    return Outcome(key, TITLES[key], seconds, error=f"{type(exc).__name__}: {first}", detail=detail)
