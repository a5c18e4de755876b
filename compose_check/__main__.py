"""`python -m compose_check`: images, `docker compose up --build`, the end-to-end checks, `docker compose down -v`.

scripts/compose-check installs Docker, the compose plugin and debootstrap first, then runs this.
"""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path
from typing import Annotated

import typer

from compose_check import checks
from compose_check.compose_file import built_images, load_compose, needed_images
from compose_check.docker import REPO, DockerError, ImageFacts, compose, image_facts, service_states
from compose_check.stand_ins import BASE_IMAGE, Provided, provide
from shared.config.mm2 import load_mm2_config

CONFIG = REPO / "deploy" / "config" / "local-two-cluster.properties"
TRANSLATOR_URL = "http://localhost:8080"
TOKEN_VARIABLE = "STRAIT_TRANSLATOR_TOKEN"
PROMETHEUS_URL = "http://localhost:9090"
RECORDS = 200

app = typer.Typer(add_completion=False)


class Clock:
    """Prints each step with the time since the start."""

    def __init__(self) -> None:
        self.start = time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def say(self, text: str) -> None:
        print(f"[{_minutes(self.elapsed())}] {text}", flush=True)


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


def _mib(size: int) -> str:
    return f"{size / 2**20:.0f} MiB"


@app.command()
def main(
    workdir: Annotated[Path, typer.Option(help="build contexts and logs")] = REPO / ".strait" / "compose-check",
    keep_running: Annotated[bool, typer.Option(help="leave the stack up after the checks (default: down -v)")] = False,
    wait_timeout: Annotated[int, typer.Option(help="seconds for every service to become healthy")] = 900,
) -> None:
    """Build the images, run the compose stack and check it end to end; exit 1 on any failure."""
    clock = Clock()
    # The translator serves failover on its published port only with a token (docker-compose.yml reads it from the
    # environment of `docker compose up`): a fresh one per run unless the caller set one.
    os.environ.setdefault(TOKEN_VARIABLE, secrets.token_urlsafe(24))
    workdir = workdir.resolve()  # Maven and docker resolve relative paths against other directories
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / "compose-check.log"
    log.write_text("")
    clock.say(f"docker compose config (full output of every step: {log})")
    compose("config", "--quiet")
    base_images, service_images = needed_images()
    provided = provide(sorted({*base_images, *service_images.values()}), workdir, log, clock.say)
    missing = {p.image: p for p in provided if p.how == "unavailable"}
    if missing.keys() & set(base_images):
        raise typer.Exit(_fail(clock, f"cannot build the Strait images: {missing}"))
    left_out = sorted(service for service, image in service_images.items() if image in missing)
    services = _services_to_run(left_out)
    results: list[checks.Check] = []
    strait_images: list[ImageFacts] = []
    try:
        clock.say(f"docker compose up --build --wait: {len(services)} services" + _left_out_text(left_out))
        try:
            compose(
                "up", "--build", "-d", "--wait", "--wait-timeout", str(wait_timeout), *services,
                timeout_s=wait_timeout + 3600, log=log,
            )  # fmt: skip
        except DockerError as exc:
            clock.say(f"up failed: {exc.message.splitlines()[0][:300]}")
            states = service_states()
            results.append(checks.services_healthy(states, services))
            _show_logs([state.service for state in states if not checks.is_healthy(state)], log)
        else:
            clock.say("stack is up; checking it")
            strait_images = [image_facts(image) for image in built_images(load_compose())]
            results.append(checks.services_healthy(service_states(), services))
            results.append(checks.images_run_unprivileged(strait_images))
            results.extend(_replication_checks(clock))
            results.append(checks.wait_for(checks.prometheus_targets_up(PROMETHEUS_URL), timeout_s=90))
            results.append(checks.dashboard_metrics_scraped(PROMETHEUS_URL))
            # (rates need two scrapes over their window after the records: waited for, not assumed)
            results.append(checks.wait_for(checks.dashboard_panels_answered(PROMETHEUS_URL), timeout_s=180))
    finally:
        if not keep_running:
            clock.say("docker compose down -v")
            compose("down", "-v", "--remove-orphans", timeout_s=600, log=log)
            leftover = compose("ps", "--all", "-q").split()
            results.append(
                checks.Check("nothing left running", not leftover, f"{len(leftover)} containers after down -v")
            )
    raise typer.Exit(_report(clock, provided, strait_images, results, left_out))


def _services_to_run(left_out: list[str]) -> list[str]:
    services = compose("config", "--services").split()
    return [service for service in services if service not in left_out]


def _left_out_text(left_out: list[str]) -> str:
    return f" (left out, image unavailable: {', '.join(left_out)})" if left_out else ""


def _replication_checks(clock: Clock) -> list[checks.Check]:
    """Records A -> B with headers, then an exact failover answer from the translator for a group of this run."""
    flow = load_mm2_config(CONFIG).enabled_flows[0]
    run_id = checks.run_id()
    clock.say(f"producing {RECORDS} marked records to A (run {run_id})")
    started = time.monotonic()
    trip = checks.produce_marked(flow, RECORDS, run_id)
    checks.read_copies(flow, trip, run_id, timeout_s=180)
    reached = checks.records_reached_target(trip, time.monotonic() - started)
    if not reached.passed:
        return [reached]
    group = f"compose-check-{run_id}"
    clock.say(f"committing {group} on A after the last record; asking the translator where it resumes on B")
    checks.commit_after_last(flow, trip, group)
    answer = checks.wait_for(checks.translator_answer(TRANSLATOR_URL, flow, group, trip), timeout_s=120)
    if not answer.passed:
        return [reached, answer]
    clock.say(f"failing {group} over to B through the translator")
    token = os.environ[TOKEN_VARIABLE]
    return [reached, answer, checks.failover_moves_group(TRANSLATOR_URL, token, flow, group, trip)]


def _show_logs(services: list[str], log: Path) -> None:
    """After a failed start, the last lines of the failing services' logs, on the console and in the log file."""
    if not services:
        return
    tail = compose("logs", "--no-color", "--tail", "40", *services)
    with log.open("a") as out:
        out.write(tail)
    print(tail[-8000:])


def _report(
    clock: Clock,
    provided: list[Provided],
    strait_images: list[ImageFacts],
    results: list[checks.Check],
    left_out: list[str],
) -> int:
    """Print what was checked; 0 when everything passed."""
    print("\nImages the stack runs on:")
    for p in provided:
        print(f"  {p.image:<32} {p.how:<11} {p.detail}")
    if strait_images:
        base = image_facts(next(i for i in provided if i.image.startswith("python:")).image).size_bytes
        print(f"\nStrait images (size, and what they add to {_mib(base)} of Python base; user):")
        for image in strait_images:
            print(f"  {image.ref:<34} {_mib(image.size_bytes):>9}  +{_mib(image.size_bytes - base):>9}  {image.user}")
    for service in left_out:
        print(f"\n{service}: not run; its image cannot be pulled here and no stand-in exists. Its dashboard was")
        print("  checked against the metrics Prometheus scraped instead.")
    print("\nChecks:")
    for outcome in results:
        print(f"  {'PASS' if outcome.passed else 'FAIL'}  {outcome.name}: {outcome.detail}")
    failed = [outcome for outcome in results if not outcome.passed]
    verdict = "passed" if results and not failed else f"FAILED ({len(failed)} of {len(results)} checks)"
    print(f"\ncompose-check {verdict} in {_minutes(clock.elapsed())} (stand-in base image: {BASE_IMAGE})")
    return 1 if failed or not results else 0


def _fail(clock: Clock, message: str) -> int:
    clock.say(f"compose-check FAILED: {message}")
    return 1


if __name__ == "__main__":
    app()
