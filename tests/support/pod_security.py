"""Kubernetes' own Pod Security Standards code as a judge of our manifests.

`tests/support/pod_security` is a small Go command around `k8s.io/pod-security-admission`, the library the API
server's admission plugin runs, so a pod spec is judged by the same rules a namespace labelled
`pod-security.kubernetes.io/enforce: restricted` applies, not by our reading of them. Built from Go modules once per
machine (about a minute) into the harness's cache, under a name that changes with its sources.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared.localkafka import HarnessError
from shared.localkafka.go_build import built_once
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
    """Build the command unless this version is there."""
    binary = pod_security_binary()
    return built_once(binary, "the Pod Security checker", ["build", "."], cwd=SOURCE, output="pod-security")


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
