"""Resolve the pinned Kafka runtime (deploy/kafka/pom.xml) from Maven Central into the local Maven cache."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from shared.errors import StraitError

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_POM = REPO_ROOT / "deploy" / "kafka" / "pom.xml"
CACHE_DIR = Path(os.environ.get("STRAIT_CACHE_DIR", Path.home() / ".cache" / "strait"))


class HarnessError(StraitError):
    """The local Kafka harness cannot run: a tool is missing or a process failed to start."""


def require_tool(name: str, install_hint: str) -> str:
    """Return the path of `name` on PATH or fail with what to install."""
    path = shutil.which(name)
    if path is None:
        raise HarnessError(f"'{name}' was not found on PATH: {install_hint}")
    return path


def java_binary() -> str:
    """The java launcher, preferring JAVA_HOME; Kafka 4 needs Java 17 or newer."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").exists():
        return str(Path(java_home) / "bin" / "java")
    return require_tool("java", "install Java 17+ (for example: apt-get install openjdk-17-jre-headless)")


def compile_against_kafka(source: Path, out: Path) -> None:
    """Compile one Java helper (tests, benchmarks) against the pinned Kafka classpath into `out`."""
    sibling = Path(java_binary()).resolve().parent / "javac"
    javac = str(sibling) if sibling.exists() else shutil.which("javac")
    if javac is None:
        raise HarnessError("'javac' was not found: install a JDK 17+ (for example: apt-get install openjdk-17-jdk)")
    out.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [javac, "-cp", kafka_classpath(quiet=True), "-d", str(out), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if result.returncode != 0:
        raise HarnessError(f"javac {source.name} failed (exit {result.returncode}): {result.stderr[-2000:]}")


def kafka_classpath(pom: Path = DEFAULT_POM, *, quiet: bool = False) -> str:
    """Return the runtime classpath of the pinned Kafka release, resolving it with Maven the first time.

    The result is cached per pom content, so later calls cost a file read; Maven keeps the jars in ~/.m2.
    """
    pom = Path(os.environ.get("STRAIT_KAFKA_POM", pom))
    if not pom.exists():
        raise HarnessError(f"Kafka runtime pom not found at {pom}: run from a Strait checkout")
    digest = hashlib.sha256(pom.read_bytes()).hexdigest()[:16]
    cached = CACHE_DIR / f"kafka-classpath-{digest}.txt"
    if cached.exists():
        classpath = cached.read_text().strip()
        if classpath and all(Path(jar).exists() for jar in classpath.split(os.pathsep)):
            return classpath
    mvn = require_tool("mvn", "install Maven 3.6+ (for example: apt-get install maven)")
    java_binary()
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_suffix(".tmp")
    if not quiet:
        print(f"Resolving Kafka jars from Maven Central ({pom}) ...", file=sys.stderr, flush=True)
    command = [mvn, "-B", "-f", str(pom), "dependency:build-classpath", f"-Dmdep.outputFile={tmp}"]
    if quiet:
        command.insert(2, "-q")
    result = subprocess.run(command, stdout=None if not quiet else subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0 or not tmp.exists():
        tail = (result.stdout or "")[-2000:]
        raise HarnessError(f"Maven could not resolve the Kafka runtime from {pom} (exit {result.returncode}): {tail}")
    tmp.replace(cached)
    return cached.read_text().strip()
