"""Which images compose-check must find, pull or stand in for, read from the real compose file and Dockerfile."""

from __future__ import annotations

import re

import pytest

from compose_check.checks import services_healthy
from compose_check.compose_file import (
    DOCKERFILE,
    built_images,
    dockerfile_base_images,
    external_images,
    load_compose,
)
from compose_check.docker import REPO, ImageFacts, ServiceState
from compose_check.stand_ins import STAND_IN_FOLDERS, StandInError, stand_in_for


def test_the_dockerfile_pulls_only_the_python_base_image() -> None:
    assert dockerfile_base_images(DOCKERFILE.read_text()) == ["python:3.11-slim-bookworm"]


def test_from_lines_take_arg_defaults_and_skip_earlier_stages() -> None:
    text = "ARG V=3.12\nFROM python:${V}-slim AS base\nFROM base AS app\nFROM $V-other\n"
    assert dockerfile_base_images(text) == ["python:3.12-slim", "3.12-other"]


def test_compose_runs_kafka_prometheus_and_grafana_images_and_builds_the_strait_services() -> None:
    compose = load_compose()
    assert set(external_images(compose).values()) == {"apache/kafka:4.1.0", "prom/prometheus:v2.55.1",
                                                       "grafana/grafana:11.3.0"}  # fmt: skip
    assert built_images(compose) == sorted(
        f"strait/{name}:local"
        for name in ("data-mirror", "topic-sync", "acl-sync", "checkpoint", "heartbeat", "audit", "offset-translator")
    )


def test_every_image_but_grafana_has_a_stand_in_folder() -> None:
    compose = load_compose()
    images = {*external_images(compose).values(), *dockerfile_base_images(DOCKERFILE.read_text())}
    recipes = {image: stand_in_for(image) for image in images}
    assert [image for image, recipe in recipes.items() if recipe is None] == ["grafana/grafana:11.3.0"]
    for recipe in recipes.values():
        if recipe is not None:
            assert (STAND_IN_FOLDERS / recipe.folder / "Dockerfile").is_file()


def test_the_kafka_stand_in_uses_the_jars_of_the_release_it_is_named_after() -> None:
    recipe = stand_in_for("apache/kafka:4.1.0")
    assert recipe is not None
    assert recipe.kafka_version == "4.1.0"


def test_a_python_base_debian_bookworm_cannot_provide_is_refused_with_the_reason() -> None:
    with pytest.raises(StandInError, match=r"python:3\.12-slim-bookworm.*Python 3\.11 only"):
        stand_in_for("python:3.12-slim-bookworm")


def test_the_kafka_stand_in_has_every_tool_the_compose_file_calls() -> None:
    calls = set(re.findall(r"(kafka-[\w-]+\.sh)", (REPO / "docker-compose.yml").read_text()))
    tools = {line.split()[0] for line in (STAND_IN_FOLDERS / "kafka" / "tools.txt").read_text().splitlines()}
    assert calls
    assert calls <= tools


@pytest.mark.parametrize(
    ("user", "root"), [("", True), ("root", True), ("0", True), ("0:0", True), ("strait", False), ("10001", False)]
)
def test_an_image_without_a_user_or_with_uid_0_runs_as_root(user: str, root: bool) -> None:
    assert ImageFacts("i", 1, user).runs_as_root is root


def test_a_restarting_or_unhealthy_service_fails_the_health_check_by_name() -> None:
    states = [
        ServiceState("kafka-a", "running", "healthy"),
        ServiceState("sample-traffic", "running", ""),
        ServiceState("prometheus", "restarting", ""),
        ServiceState("checkpoint", "running", "unhealthy"),
    ]

    outcome = services_healthy(states, ["kafka-a", "sample-traffic", "prometheus", "checkpoint", "heartbeat"])

    assert not outcome.passed
    assert outcome.detail == "checkpoint: running unhealthy; heartbeat: no container; prometheus: restarting"


def test_running_services_without_a_health_check_pass_beside_healthy_ones() -> None:
    states = [ServiceState("kafka-a", "running", "healthy"), ServiceState("sample-traffic", "running", "")]

    outcome = services_healthy(states, ["kafka-a", "sample-traffic"])

    assert outcome.passed
    assert outcome.detail == "1 healthy: kafka-a"
