"""Kubernetes' own Pod Security Standards code as a judge of our manifests.

`tests/support/pod_security` is a small Go command around `k8s.io/pod-security-admission`, the library the API
server's admission plugin runs, so a pod spec is judged by the same rules a namespace labelled
`pod-security.kubernetes.io/enforce: restricted` applies, not by our reading of them. Built from Go modules once per
machine (about a minute) into the harness's cache, under a name that changes with its sources.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared.localkafka import HarnessError
from shared.localkafka.jars import CACHE_DIR

SOURCE = Path(__file__).resolve().parent / "pod_security"


@dataclass(frozen=True)
class Verdict:
    """One pod's judgement: allowed, or the rules it breaks with their details."""

    name: str
    allowed: bool
    forbidden: tuple[str, ...]


def pod_security_binary() -> Path:
    """Where the command built from the current sources is kept."""
    digest = hashlib.sha256()
    for name in ("go.mod", "go.sum", "main.go"):
        digest.update((SOURCE / name).read_bytes())
    return CACHE_DIR / "bin" / f"pod-security-{digest.hexdigest()[:12]}"


def install_pod_security() -> Path:
    """Build the command unless this version is there; one build at a time across test workers."""
    binary = pod_security_binary()
    if binary.exists():
        return binary
    go = shutil.which("go")
    if go is None:
        raise HarnessError("checking manifests against Pod Security needs Go (install golang)")
    binary.parent.mkdir(parents=True, exist_ok=True)
    with (binary.parent / "pod-security.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if binary.exists():  # another worker built it while this one waited
            return binary
        partial = binary.with_suffix(f".{os.getpid()}")
        done = subprocess.run(
            [go, "build", "-o", str(partial), "."],
            cwd=SOURCE,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        if done.returncode != 0:
            raise HarnessError(f"building the Pod Security checker failed: {done.stderr[-2000:]}")
        partial.replace(binary)
    return binary


def judge_pods(pods: dict[str, dict[str, Any]], level: str = "restricted") -> dict[str, Verdict]:
    """Each named pod spec judged at `level` (baseline or restricted) of the newest Pod Security version."""
    request = [{"name": name, "metadata": {"name": name}, "spec": spec} for name, spec in pods.items()]
    done = subprocess.run(
        [str(install_pod_security()), level],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if done.returncode != 0:
        raise HarnessError(f"the Pod Security checker refused its input: {done.stderr.strip()}")
    return {
        one["name"]: Verdict(one["name"], one["allowed"], tuple(one["forbidden"])) for one in json.loads(done.stdout)
    }
