"""Local stand-ins for the images the compose file and the Dockerfile name but this machine cannot pull.

A stand-in is built from Debian bookworm (debootstrap) and Debian packages, or the Maven-resolved Kafka jars,
and tagged with the name it stands in for. Images present or pullable are used as they are.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from compose_check.docker import REPO, DockerError, inspect_image, pull_error, run

STAND_IN_FOLDERS = REPO / "deploy" / "docker" / "stand-ins"
KAFKA_POM = REPO / "deploy" / "kafka" / "pom.xml"
BASE_IMAGE = "strait-standin/debian:bookworm"
BOOKWORM_PYTHON = "3.11"
STAND_IN_LABEL = "org.strait.stand-in"  # on every stand-in: the folder it was built from
DEBIAN_MIRROR = "http://deb.debian.org/debian"
LOCAL_CA_FOLDER = Path("/usr/local/share/ca-certificates")


class StandInError(DockerError):
    """An image can be neither pulled nor stood in for."""


@dataclass(frozen=True)
class StandIn:
    """How one image is stood in for: its folder under deploy/docker/stand-ins, and what goes into the context."""

    image: str
    folder: str
    kafka_version: str | None = None


def stand_in_for(image: str) -> StandIn | None:
    """The stand-in recipe for `image`, or None where none can exist on Debian (Grafana)."""
    name, _, tag = image.partition(":")
    if name == "python":
        version = tag.split("-")[0]
        if not tag.endswith("-slim-bookworm") or version != BOOKWORM_PYTHON:
            raise StandInError(
                f"cannot stand in for {image}: Debian bookworm has Python {BOOKWORM_PYTHON} only "
                f"(the Dockerfile's PYTHON_VERSION must be {BOOKWORM_PYTHON} on a machine that cannot pull)"
            )
        return StandIn(image, "python")
    if name == "apache/kafka":
        return StandIn(image, "kafka", kafka_version=tag)
    if name == "prom/prometheus":
        return StandIn(image, "prometheus")
    return None


@dataclass(frozen=True)
class Provided:
    """How an image came to be available, or why it is not."""

    image: str
    how: str  # "present", "pulled", "stand-in" or "unavailable"
    detail: str = ""


def provide(images: list[str], workdir: Path, log: Path, say: Callable[[str], None]) -> list[Provided]:
    """Make every image available: keep, pull, or build its stand-in; report those that cannot be had."""
    results = []
    for image in images:
        info = inspect_image(image)
        if info is not None:
            folder = (info["Config"].get("Labels") or {}).get(STAND_IN_LABEL)
            origin = f"a stand-in built earlier from deploy/docker/stand-ins/{folder}" if folder else ""
            results.append(Provided(image, "present", origin))
            continue
        reason = pull_error(image)
        if reason is None:
            results.append(Provided(image, "pulled"))
            continue
        recipe = stand_in_for(image)
        if recipe is None:
            results.append(Provided(image, "unavailable", f"cannot pull ({reason}) and no stand-in exists"))
            continue
        say(f"{image}: cannot pull ({reason}); building a local stand-in")
        build_stand_in(recipe, workdir, log)
        results.append(Provided(image, "stand-in", f"built from deploy/docker/stand-ins/{recipe.folder}"))
    return results


def build_stand_in(recipe: StandIn, workdir: Path, log: Path) -> None:
    """Build one stand-in image from its folder (plus the Kafka jars for the Kafka one), tagged as `recipe.image`."""
    ensure_base_image(workdir, log)
    context = workdir / "stand-ins" / recipe.folder
    shutil.rmtree(context, ignore_errors=True)
    shutil.copytree(STAND_IN_FOLDERS / recipe.folder, context)
    if recipe.kafka_version is not None:
        resolve_kafka_jars(recipe.kafka_version, context / "libs", log)
    # The legacy builder needs no buildx plugin and uses the local base image without asking a registry.
    run(
        [
            "docker", "build", "--force-rm", "--build-arg", f"BASE={BASE_IMAGE}",
            "--label", f"{STAND_IN_LABEL}={recipe.folder}", "-t", recipe.image, str(context),
        ],
        timeout_s=1800,
        log=log,
        env={"DOCKER_BUILDKIT": "0"},
    )  # fmt: skip


def resolve_kafka_jars(version: str, into: Path, log: Path) -> None:
    """The runtime jars of Kafka `version` from Maven Central (the harness's pom at that version)."""
    run(
        [
            "mvn", "-B", "-q", "-f", str(KAFKA_POM), f"-Dkafka.version={version}",
            "dependency:copy-dependencies", "-DincludeScope=runtime", f"-DoutputDirectory={into}",
        ],
        timeout_s=1200,
        log=log,
    )  # fmt: skip
    if not any(into.glob(f"kafka_*-{version}.jar")):
        raise StandInError(f"Maven resolved no kafka_*-{version}.jar into {into}: is {version} a Kafka release?")


def ensure_base_image(workdir: Path, log: Path) -> None:
    """A minimal Debian bookworm image from debootstrap, trusting this machine's local CAs as the host does."""
    if inspect_image(BASE_IMAGE) is not None:
        return
    rootfs = workdir / "rootfs"
    shutil.rmtree(rootfs, ignore_errors=True)
    run(
        ["debootstrap", "--variant=minbase", "--include=ca-certificates", "bookworm", str(rootfs), DEBIAN_MIRROR],
        timeout_s=1800,
        log=log,
    )
    local_cas = sorted(LOCAL_CA_FOLDER.glob("*.crt"))
    for ca in local_cas:
        shutil.copy(ca, rootfs / "usr/local/share/ca-certificates" / ca.name)
    if local_cas:
        run(["chroot", str(rootfs), "update-ca-certificates"], timeout_s=120, log=log)
    # As in Debian's container images: packages installed during a build never start services.
    policy = rootfs / "usr/sbin/policy-rc.d"
    policy.write_text("#!/bin/sh\nexit 101\n")
    policy.chmod(0o755)
    for leftover in [*rootfs.glob("var/cache/apt/archives/*.deb"), *rootfs.glob("var/lib/apt/lists/*_*")]:
        leftover.unlink()
    with subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE) as tar:
        imported = subprocess.run(
            ["docker", "import", "-", BASE_IMAGE], stdin=tar.stdout, capture_output=True, text=True, timeout=600
        )
    if tar.returncode != 0 or imported.returncode != 0:
        raise StandInError(f"importing {rootfs} as {BASE_IMAGE} failed: {imported.stderr.strip()}")
    shutil.rmtree(rootfs, ignore_errors=True)
