"""The docker and docker compose commands compose-check runs; a failure names the command and shows its output."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared.errors import StraitError

REPO = Path(__file__).resolve().parents[1]
COMPOSE_FILE = REPO / "docker-compose.yml"


class DockerError(StraitError):
    """A docker command failed or ran out of time."""


def run(
    args: Sequence[str],
    *,
    timeout_s: float,
    cwd: Path = REPO,
    log: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> str:
    """Run one command and return its standard output; with `log`, both streams go to that file instead."""
    command = " ".join(args)
    environment = {**os.environ, **(env or {})}
    try:
        if log is not None:
            with log.open("a") as out:
                out.write(f"\n$ {command}\n")
                out.flush()
                completed = subprocess.run(
                    args, cwd=cwd, env=environment, stdout=out, stderr=subprocess.STDOUT, timeout=timeout_s
                )
            if completed.returncode != 0:
                tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:])
                raise DockerError(f"`{command}` failed (exit {completed.returncode}); end of {log}:\n{tail}")
            return ""
        result = subprocess.run(args, cwd=cwd, env=environment, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        raise DockerError(f"`{command}` did not finish within {timeout_s:.0f} s") from exc
    except FileNotFoundError as exc:
        raise DockerError(f"`{args[0]}` is not installed: run scripts/compose-check, which installs it") from exc
    if result.returncode != 0:
        raise DockerError(f"`{command}` failed (exit {result.returncode}): {result.stderr.strip()[-2000:]}")
    return result.stdout


def compose(*args: str, timeout_s: float = 120, log: Path | None = None) -> str:
    """`docker compose` on the repository's compose file."""
    return run(["docker", "compose", "-f", str(COMPOSE_FILE), *args], timeout_s=timeout_s, log=log)


def inspect_image(ref: str) -> dict[str, Any] | None:
    """`docker image inspect` of a local image; None when the local store does not hold it."""
    try:
        info: dict[str, Any] = json.loads(run(["docker", "image", "inspect", ref], timeout_s=30))[0]
    except DockerError:
        return None
    return info


def pull_error(ref: str, *, timeout_s: float = 300) -> str | None:
    """Pull `ref`; None when it worked, else the reason it did not."""
    try:
        run(["docker", "pull", "-q", ref], timeout_s=timeout_s)
    except DockerError as exc:
        return exc.message.splitlines()[-1][-300:]
    return None


@dataclass(frozen=True)
class ImageFacts:
    """What the check reports of one image."""

    ref: str
    size_bytes: int
    user: str

    @property
    def runs_as_root(self) -> bool:
        """An empty user, root or uid 0 (with or without a group) runs as root."""
        return self.user.split(":")[0] in ("", "root", "0")


def image_facts(ref: str) -> ImageFacts:
    """Size and configured user of a local image."""
    info = inspect_image(ref)
    if info is None:
        raise DockerError(f"image {ref} is not in the local image store")
    return ImageFacts(ref=ref, size_bytes=int(info["Size"]), user=str(info["Config"].get("User") or ""))


@dataclass(frozen=True)
class ServiceState:
    """One compose service as `docker compose ps` shows it."""

    service: str
    state: str
    health: str


def service_states() -> list[ServiceState]:
    """Every container of the stack, running or not."""
    out = compose("ps", "--all", "--format", "json")
    rows = [json.loads(line) for line in out.splitlines() if line.strip()]
    if len(rows) == 1 and isinstance(rows[0], list):  # older compose prints one JSON array
        rows = rows[0]
    return [ServiceState(row["Service"], row.get("State", ""), row.get("Health", "")) for row in rows]
