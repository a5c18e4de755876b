"""The Kubernetes manifests validate against the API schemas of kubernetes-validate, strictly (unknown fields fail)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
KUBERNETES = REPO / "deploy" / "kubernetes"
SPARK_COMPONENT = KUBERNETES / "spark-on-kubernetes"
VERSION = kubernetes_validate.latest_version()


def documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def listed_resources(folder: Path) -> list[Path]:
    """The files a kustomization (or component) lists as resources."""
    return [folder / name for name in documents(folder / "kustomization.yaml")[0]["resources"]]


def strategic_merge(base: Any, patch: Any) -> Any:
    """Kustomize's strategic merge as far as these manifests use it: maps merge, named lists merge by name."""
    if isinstance(base, dict) and isinstance(patch, dict):
        merged = dict(base)
        for key, value in patch.items():
            merged[key] = strategic_merge(base[key], value) if key in base else value
        return merged
    named = (
        isinstance(base, list)
        and isinstance(patch, list)
        and all(isinstance(i, dict) and "name" in i for i in base + patch)
    )
    if named:
        by_name = {item["name"]: item for item in base}
        for item in patch:
            by_name[item["name"]] = strategic_merge(by_name[item["name"]], item) if item["name"] in by_name else item
        return list(by_name.values())
    return patch


@pytest.mark.parametrize(
    "path",
    [*listed_resources(KUBERNETES), *listed_resources(SPARK_COMPONENT)],
    ids=lambda path: str(path.relative_to(KUBERNETES)),
)
def test_each_manifest_validates_against_the_kubernetes_schemas(path: Path) -> None:
    for document in documents(path):
        kubernetes_validate.validate(document, VERSION, strict=True)


def test_the_spark_component_patches_data_mirror_into_a_valid_deployment() -> None:
    (deployment,) = [d for d in documents(KUBERNETES / "data-mirror.yaml") if d["kind"] == "Deployment"]
    (patch,) = documents(SPARK_COMPONENT / "data-mirror-patch.yaml")

    patched = strategic_merge(deployment, patch)

    kubernetes_validate.validate(patched, VERSION, strict=True)
    (container,) = patched["spec"]["template"]["spec"]["containers"]
    assert "STRAIT_CONFIG_OVERRIDES" in {env["name"] for env in container["env"]}
    assert {"driver-rpc", "blockmanager"} <= {port["name"] for port in container["ports"]}


def test_a_misspelt_field_fails_validation() -> None:
    """The strict mode the tests above rely on: a field the API does not know is an error, not ignored."""
    (deployment,) = [d for d in documents(KUBERNETES / "topic-sync.yaml") if d["kind"] == "Deployment"]
    broken = copy.deepcopy(deployment)
    broken["spec"]["replica"] = broken["spec"].pop("replicas", 1)

    with pytest.raises(kubernetes_validate.ValidationError, match="replica"):
        kubernetes_validate.validate(broken, VERSION, strict=True)
