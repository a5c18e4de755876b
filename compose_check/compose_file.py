"""What docker-compose.yml and the Dockerfile name: images to pull, images to build."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import yaml

from compose_check.docker import COMPOSE_FILE, REPO

DOCKERFILE = REPO / "deploy" / "docker" / "Dockerfile"


def load_compose() -> dict[str, Any]:
    """The compose file as data (YAML anchors and merge keys resolved)."""
    spec: dict[str, Any] = yaml.safe_load(COMPOSE_FILE.read_text())
    return spec


def external_images(compose: Mapping[str, Any]) -> dict[str, str]:
    """Service -> image, for the services that run an image instead of building one."""
    services: Mapping[str, Mapping[str, Any]] = compose.get("services", {})
    return {name: str(spec["image"]) for name, spec in services.items() if "image" in spec and "build" not in spec}


def dockerfile_base_images(text: str) -> list[str]:
    """The images FROM lines pull (ARG defaults substituted, earlier build stages left out)."""
    defaults: dict[str, str] = {}
    stages: set[str] = set()
    images: list[str] = []
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        instruction = words[0].upper()
        if instruction == "ARG" and not images and len(words) > 1 and "=" in words[1]:
            name, _, value = words[1].partition("=")
            defaults[name] = value
        elif instruction == "FROM" and len(words) > 1:
            ref = re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: defaults.get(m.group(1) or m.group(2), ""), words[1])
            if ref not in stages and ref not in images:
                images.append(ref)
            if len(words) >= 4 and words[2].upper() == "AS":
                stages.add(words[3])
    return images


def built_images(compose: Mapping[str, Any]) -> list[str]:
    """The image names compose gives what it builds (the Strait services)."""
    services: Mapping[str, Mapping[str, Any]] = compose.get("services", {})
    return sorted({str(spec["image"]) for spec in services.values() if "build" in spec and "image" in spec})


def needed_images() -> tuple[list[str], dict[str, str]]:
    """(base images of the Dockerfile, service -> image of the compose file)."""
    return dockerfile_base_images(DOCKERFILE.read_text()), external_images(load_compose())
