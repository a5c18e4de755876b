"""The deployment files are safe as shipped (issue 54, item 6): every YAML file under deploy/kubernetes (the
kustomization, its components, patches and pod templates) and docker-compose.yml, read with PyYAML.

Refused: a secret value written into a file (a placeholder such as `change-me-token`, or any literal: whoever has
the repository knows it), a port compose publishes beyond the host's loopback, a pod given a whole Secret (a volume
without `items`, `envFrom` a Secret) or a key it has no use for (only the translator gets its token and TLS key), a
NetworkPolicy ingress rule that does not name its sources, and a translator on Kubernetes without TLS.
"""

from __future__ import annotations

import base64
import importlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from shared.config import parse_properties

# pyyaml has no stubs in this environment; imported by name so mypy sees a plain module.
yaml: Any = importlib.import_module("yaml")

REPO = Path(__file__).resolve().parents[2]
KUBERNETES = REPO / "deploy" / "kubernetes"
COMPOSE = REPO / "docker-compose.yml"

TRANSLATOR = "strait-offset-translator"
CREDENTIALS = ("strait-credentials", "credentials.properties")  # every cluster login, as ${file:...} reads it
TOKEN = ("strait-credentials", "translator-token")
TLS_SECRET = "strait-offset-translator-tls"  # kubernetes.io/tls: tls.crt and tls.key
# The (Secret, key) pairs a pod may be given: the translator its token and TLS key besides the cluster logins every
# service uses (each reads or writes both clusters of its flows); every other pod the cluster logins at most.
TRANSLATOR_KEYS = {CREDENTIALS, TOKEN, (TLS_SECRET, "tls.crt"), (TLS_SECRET, "tls.key")}
CLUSTER_KEYS = {CREDENTIALS}

PLACEHOLDER = re.compile(
    r"change[\W_]*me|replace[\W_]*me|placeholder|example|passw(or)?d|secret|your[\W_]|<[^>]*>|\bxxx|\btodo\b|"
    r"^(admin|test|token|default|none|null|changeit|12345678?)$",
    re.IGNORECASE,
)
SECRET_NAME = re.compile(r"token|passw(or)?d|secret|credential|api[-_]?key|private[-_]?key", re.IGNORECASE)
REFERENCE = re.compile(r"^\$\{[a-zA-Z][\w.-]*:[^}]*\}$")  # ${file:path:key}, ${env:NAME}, ${dir:path:key}
LOOPBACK = {"127.0.0.1", "::1", "[::1]", "localhost"}
POD_KINDS = {"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "Pod"}


# -- reading the files -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Document:
    """One YAML document of a file under deploy/kubernetes."""

    path: Path
    body: dict[str, Any]

    @property
    def where(self) -> str:
        metadata = self.body.get("metadata") or {}
        return f"{self.path.relative_to(REPO)}: {self.body.get('kind')} {metadata.get('name', '?')}"


def kubernetes_documents() -> list[Document]:
    """Every document of every YAML file under deploy/kubernetes, components and templates included."""
    paths = sorted([*KUBERNETES.rglob("*.yaml"), *KUBERNETES.rglob("*.yml")])
    return [Document(p, body) for p in paths for body in yaml.safe_load_all(p.read_text()) if isinstance(body, dict)]


@dataclass(frozen=True)
class PodSpec:
    """A pod spec found in a workload, a patch of one or a pod template; `name` is its app (or object) name."""

    where: str
    name: str
    spec: dict[str, Any]

    def containers(self) -> list[dict[str, Any]]:
        spec = self.spec
        return [*spec.get("initContainers", []), *spec.get("containers", []), *spec.get("ephemeralContainers", [])]


def pod_specs() -> list[PodSpec]:
    """Every pod spec the Kubernetes files hold."""
    found = []
    for document in kubernetes_documents():
        body, kind = document.body, document.body.get("kind")
        if kind == "CronJob":
            template = body.get("spec", {}).get("jobTemplate", {}).get("spec", {}).get("template", {})
        elif kind == "Pod":
            template = body
        elif kind in POD_KINDS:
            template = body.get("spec", {}).get("template", {})
        else:
            continue
        labels = (template.get("metadata") or {}).get("labels") or {}
        name = labels.get("app.kubernetes.io/name") or (body.get("metadata") or {}).get("name", "?")
        if "spec" in template:
            found.append(PodSpec(document.where, name, template["spec"]))
    return found


def is_translator(pod: PodSpec) -> bool:
    return pod.name == TRANSLATOR or any("strait-offset-translator" in c.get("command", []) for c in pod.containers())


def translator_pods() -> list[PodSpec]:
    pods = [pod for pod in pod_specs() if is_translator(pod) and pod.spec.get("containers")]
    assert pods, "the Kubernetes files run the offset translator"
    return pods


# -- secret values ---------------------------------------------------------------------------------------------
def placeholder_problem(value: str) -> str | None:
    """Why a value found where a secret goes is refused, or None for an empty value or a provider reference."""
    stripped = value.strip().strip('"').strip("'")
    if not stripped or REFERENCE.match(stripped):
        return None
    if PLACEHOLDER.search(stripped):
        return f"a placeholder ({stripped[:40]!r})"
    return "a literal value: anyone with this repository knows it"


def secret_file_problems(where: str, value: str) -> Iterator[str]:
    """A Secret's value: as a whole, or line by line when it is a properties file (`key=value`)."""
    lines = [line for line in value.splitlines() if line.strip() and not line.lstrip().startswith(("#", "!"))]
    if len(lines) > 1 or (lines and re.match(r"^\s*[\w.-]+\s*[=:]", lines[0])):
        for key, item in parse_properties(value).items():
            if (problem := placeholder_problem(item)) is not None:
                yield f"{where} key {key}: {problem}"
    elif (problem := placeholder_problem(value)) is not None:
        yield f"{where}: {problem}"


def shipped_secret_problems() -> Iterator[str]:
    for document in kubernetes_documents():
        body = document.body
        if body.get("kind") == "Secret":
            for key, value in (body.get("stringData") or {}).items():
                yield from secret_file_problems(f"{document.where} stringData.{key}", str(value))
            for key, value in (body.get("data") or {}).items():
                text = base64.b64decode(str(value)).decode(errors="replace")
                yield from secret_file_problems(f"{document.where} data.{key}", text)
        for generator in body.get("secretGenerator") or []:
            for literal in generator.get("literals") or []:
                key, _, value = str(literal).partition("=")
                yield from secret_file_problems(
                    f"{document.where} secretGenerator {generator.get('name')} {key}", value
                )


def pod_env_problems() -> Iterator[str]:
    """A literal value of a container variable named like a secret (a *_FILE path to one is fine)."""
    for pod in pod_specs():
        for container in pod.containers():
            for env in container.get("env") or []:
                name, value = env["name"], env.get("value")
                if value is None or name.upper().endswith(("_FILE", "_PATH", "_DIR")) or not SECRET_NAME.search(name):
                    continue
                if (problem := placeholder_problem(str(value))) is not None:
                    yield f"{pod.where} container {container['name']} env {name}: {problem}"


def properties_problems() -> Iterator[str]:
    """Config files under deploy/kubernetes: passwords, tokens and JAAS passwords only as ${provider:...}."""
    for path in sorted(KUBERNETES.rglob("*.properties")):
        for key, value in parse_properties(path.read_text()).items():
            where = f"{path.relative_to(REPO)} {key}"
            if SECRET_NAME.search(key.rsplit(".", 1)[-1]) and (problem := placeholder_problem(value)):
                yield f"{where}: {problem}"
            for password in re.findall(r'password\s*=\s*"([^"]*)"', value):
                if (problem := placeholder_problem(password)) is not None:
                    yield f"{where} password=: {problem}"


def test_no_secret_value_ships_in_the_kubernetes_files() -> None:
    """Secrets are created by the operator (docs/security.md#kubernetes), never applied from the repository."""
    assert [*shipped_secret_problems(), *pod_env_problems(), *properties_problems()] == []


# -- Secrets mounted -------------------------------------------------------------------------------------------
def secret_keys(pod: PodSpec) -> tuple[set[tuple[str, str]], list[str]]:
    """The (Secret, key) pairs a pod is given, and how it is given a whole Secret, if it is."""
    keys: set[tuple[str, str]] = set()
    whole: list[str] = []
    sources = []
    for volume in pod.spec.get("volumes") or []:
        if "secret" in volume:
            sources.append((f"volume {volume['name']}", volume["secret"].get("secretName"), volume["secret"]))
        for projected in (volume.get("projected") or {}).get("sources") or []:
            if "secret" in projected:
                sources.append((f"volume {volume['name']}", projected["secret"].get("name"), projected["secret"]))
    for what, secret, source in sources:
        items = source.get("items") or []
        if not items:
            whole.append(f"{what} mounts the whole Secret {secret} (list its items)")
        keys |= {(secret, item["key"]) for item in items}
    for container in pod.containers():
        for env_from in container.get("envFrom") or []:
            if "secretRef" in env_from:
                whole.append(f"container {container['name']} envFrom the whole Secret {env_from['secretRef']['name']}")
        for env in container.get("env") or []:
            ref = (env.get("valueFrom") or {}).get("secretKeyRef")
            if ref is not None:
                keys.add((ref["name"], ref["key"]))
    return keys, whole


@pytest.mark.parametrize("pod", pod_specs(), ids=lambda pod: pod.where)
def test_each_pod_gets_only_the_secret_keys_it_needs(pod: PodSpec) -> None:
    keys, whole = secret_keys(pod)
    assert whole == [], pod.where
    allowed = TRANSLATOR_KEYS if is_translator(pod) else CLUSTER_KEYS
    assert keys - allowed == set(), f"{pod.where}: keys it has no use for"
    if not is_translator(pod):
        assert not [key for key in keys if "token" in key[1].lower() or key[0] == TLS_SECRET], pod.where


# -- the translator: TLS and its token from a file --------------------------------------------------------------
def setting(container: dict[str, Any], env_name: str, flag: str) -> str | None:
    """A translator setting from the container's environment or its arguments."""
    for env in container.get("env") or []:
        if env["name"] == env_name:
            return str(env.get("value")) if "value" in env else "(valueFrom)"
    args = [*container.get("command", []), *container.get("args", [])]
    return args[args.index(flag) + 1] if flag in args else None


def mounted_item(pod: PodSpec, container: dict[str, Any], path: str) -> tuple[str, str] | None:
    """The (Secret, key) a file path of the container is, through its volume mounts and the volume's items."""
    volumes = {volume["name"]: volume for volume in pod.spec.get("volumes") or []}
    for mount in container.get("volumeMounts") or []:
        directory = PurePosixPath(mount["mountPath"])
        secret = volumes.get(mount["name"], {}).get("secret")
        if secret is None or directory not in PurePosixPath(path).parents:
            continue
        relative = str(PurePosixPath(path).relative_to(directory))
        for item in secret.get("items") or []:
            if item.get("path", item["key"]) == relative:
                return secret["secretName"], item["key"]
    return None


def translator_containers() -> Iterator[tuple[PodSpec, dict[str, Any]]]:
    for pod in translator_pods():
        for container in pod.spec["containers"]:
            if "strait-offset-translator" in container.get("command", []) or container["name"] == "offset-translator":
                yield pod, container


def test_the_translator_serves_https_on_kubernetes_from_a_tls_secret() -> None:
    for pod, container in translator_containers():
        cert = setting(container, "STRAIT_TLS_CERT_FILE", "--tls-cert-file")
        key = setting(container, "STRAIT_TLS_KEY_FILE", "--tls-key-file")
        assert cert is not None, f"{pod.where}: no STRAIT_TLS_CERT_FILE (plain HTTP off loopback)"
        assert key is not None, f"{pod.where}: no STRAIT_TLS_KEY_FILE (a kubernetes.io/tls Secret keeps it apart)"
        assert mounted_item(pod, container, cert) == (TLS_SECRET, "tls.crt"), pod.where
        assert mounted_item(pod, container, key) == (TLS_SECRET, "tls.key"), pod.where
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            if "httpGet" in container.get(probe, {}):
                assert container[probe]["httpGet"].get("scheme") == "HTTPS", f"{pod.where}: {probe}"


def test_the_translator_reads_its_token_from_its_own_secret_item() -> None:
    for pod, container in translator_containers():
        in_env = setting(container, "STRAIT_TRANSLATOR_TOKEN", "--token")
        assert in_env is None, f"{pod.where}: the token goes in a file of its Secret item, not the environment"
        token_file = setting(container, "STRAIT_TRANSLATOR_TOKEN_FILE", "--token-file")
        assert token_file is not None, f"{pod.where}: no token, so failover and the DR actions are off"
        assert mounted_item(pod, container, token_file) == TOKEN, pod.where


# -- NetworkPolicies -------------------------------------------------------------------------------------------
def selector_names_something(selector: object) -> bool:
    return isinstance(selector, dict) and bool(selector.get("matchLabels") or selector.get("matchExpressions"))


def peer_problem(peer: dict[str, Any]) -> str | None:
    if "ipBlock" in peer:
        cidr = peer["ipBlock"].get("cidr", "")
        return f"ipBlock {cidr} is every address" if cidr.endswith("/0") else None
    selectors = [peer[key] for key in ("namespaceSelector", "podSelector") if key in peer]
    if not selectors or not any(selector_names_something(selector) for selector in selectors):
        return f"peer {peer} selects every pod (name it by labels)"
    return None


def network_policies() -> list[Document]:
    policies = [d for d in kubernetes_documents() if d.body.get("kind") == "NetworkPolicy"]
    assert policies, "the Kubernetes files ship NetworkPolicies"
    return policies


@pytest.mark.parametrize("policy", network_policies(), ids=lambda document: document.where)
def test_every_network_policy_ingress_rule_names_its_sources(policy: Document) -> None:
    problems = []
    for number, rule in enumerate(policy.body["spec"].get("ingress") or []):
        if not rule.get("from"):
            problems.append(f"ingress rule {number} has no `from`: it admits every source")
        problems += [f"ingress rule {number}: {p}" for peer in rule.get("from") or [] if (p := peer_problem(peer))]
    assert problems == [], policy.where


# -- docker-compose.yml ----------------------------------------------------------------------------------------
def compose_services() -> dict[str, Any]:
    services: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())["services"]
    return services


def published_problem(service: str, port: object) -> str | None:
    """A published port whose host address is not loopback (a bare port is published on every interface)."""
    if isinstance(port, dict):
        host = str(port.get("host_ip", ""))
        shown = f"{host or '*'}:{port.get('published', '?')}->{port.get('target')}"
    else:
        text = str(port).split("/", 1)[0]  # [HOST_IP:][HOST_PORT:]CONTAINER_PORT[/PROTOCOL]
        parts = text.split(":")
        host = text[: text.index("]") + 1] if text.startswith("[") else parts[0] if len(parts) == 3 else ""
        shown = str(port)
    return None if host in LOOPBACK else f"{service} publishes {shown} on every interface of the host"


def environment(entry: dict[str, Any]) -> dict[str, str | None]:
    env = entry.get("environment") or {}
    if isinstance(env, list):
        return {item.partition("=")[0]: item.partition("=")[2] if "=" in item else None for item in env}
    return {str(key): None if value is None else str(value) for key, value in env.items()}


def compose_value_problem(value: str) -> str | None:
    """A compose value for a secret: from the caller's environment, with an empty default at most."""
    match = re.fullmatch(r"\$\{(\w+)(?:(:?[-?])(.*))?\}", value.strip())
    if match is None:
        return placeholder_problem(value)
    operator, default = match.group(2), match.group(3) or ""
    return placeholder_problem(default) if operator in (":-", "-") else None


def test_compose_publishes_every_port_on_the_host_loopback_only() -> None:
    problems = [
        problem
        for name, entry in compose_services().items()
        for port in entry.get("ports") or []
        if (problem := published_problem(name, port))
    ]
    problems += [
        f"{name} uses the host's network" for name, e in compose_services().items() if e.get("network_mode") == "host"
    ]
    assert problems == []


def test_compose_writes_no_secret_and_gives_the_token_to_the_translator_alone() -> None:
    problems, holders = [], set()
    for name, entry in compose_services().items():
        for variable, value in environment(entry).items():
            if variable.startswith("STRAIT_TRANSLATOR_TOKEN"):
                holders.add(name)
            secret_like = value is not None and SECRET_NAME.search(variable) and not variable.endswith("_FILE")
            if secret_like and (problem := compose_value_problem(str(value))) is not None:
                problems.append(f"{name} {variable}: {problem}")
    assert problems == []
    assert holders <= {"offset-translator", "cli"}, "only the translator (and a CLI container) needs the token"


# -- the check itself --------------------------------------------------------------------------------------------
def test_the_checks_refuse_what_issue_54_found() -> None:
    """What the files shipped before: each is refused, naming the problem."""
    assert placeholder_problem("change-me-token") == "a placeholder ('change-me-token')"
    assert placeholder_problem("change-me-a") is not None
    assert placeholder_problem("${file:/etc/strait/secrets/credentials.properties:a.password}") is None
    assert placeholder_problem("") is None
    assert published_problem("kafka-a", "9092:9092") is not None
    assert published_problem("kafka-a", "9092") is not None
    assert published_problem("kafka-a", {"target": 9092, "published": 9092}) is not None
    assert published_problem("kafka-a", "127.0.0.1:9092:9092") is None
    assert published_problem("kafka-a", "[::1]:9092:9092") is None
    assert published_problem("kafka-a", {"target": 9092, "published": 9092, "host_ip": "127.0.0.1"}) is None
    assert compose_value_problem("${STRAIT_TRANSLATOR_TOKEN:-}") is None
    assert compose_value_problem("${STRAIT_TRANSLATOR_TOKEN:?set it}") is None
    assert compose_value_problem("${STRAIT_TRANSLATOR_TOKEN:-change-me}") is not None
    assert peer_problem({"namespaceSelector": {}}) is not None
    assert peer_problem({"ipBlock": {"cidr": "0.0.0.0/0"}}) is not None
    assert peer_problem({"podSelector": {"matchLabels": {"spark-role": "executor"}}}) is None
    whole = PodSpec(
        "x", "strait-data-mirror", {"volumes": [{"name": "s", "secret": {"secretName": "strait-credentials"}}]}
    )
    assert secret_keys(whole)[1] == ["volume s mounts the whole Secret strait-credentials (list its items)"]
