"""Go programs the harness builds from Go modules once per machine (Toxiproxy, the Pod Security checker), kept in
its cache under a name that says which version: built in a scratch directory, moved into place when done, one
build at a time across processes (test workers start together)."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from shared.localkafka.jars import HarnessError

BUILD_TIMEOUT_S = 900


def built_once(
    binary: Path,
    what: str,
    arguments: Sequence[str],
    *,
    cwd: Path | None = None,
    output: str | None = None,
    env: Mapping[str, str] | None = None,
) -> Path:
    """`binary`, built first if it is missing by `go <arguments>` run with GOBIN set to a scratch directory (for
    `go install module@version`), or with `-o` into it when `output` names the file (for `go build` in `cwd`)."""
    if binary.exists():
        return binary
    go = shutil.which("go")
    if go is None:
        raise HarnessError(f"{what} is built from Go modules: install Go (for example: apt-get install golang)")
    binary.parent.mkdir(parents=True, exist_ok=True)
    with (binary.parent / f"{binary.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if binary.exists():  # another process built it while this one waited
            return binary
        with tempfile.TemporaryDirectory(prefix="build-", dir=binary.parent) as scratch:
            flags = ["-o", str(Path(scratch) / output)] if output else []
            command = [go, arguments[0], *flags, *arguments[1:]]  # `go build -o FILE PACKAGES`
            done = subprocess.run(
                command,
                cwd=cwd,
                env={**os.environ, **(env or {}), "GOBIN": scratch},
                capture_output=True,
                text=True,
                timeout=BUILD_TIMEOUT_S,
                check=False,
            )
            built = [path for path in Path(scratch).iterdir() if path.is_file()]
            if done.returncode != 0 or len(built) != 1:
                raise HarnessError(f"building {what} failed: {done.stderr[-2000:]}")
            built[0].replace(binary)
    return binary
