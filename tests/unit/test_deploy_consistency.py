"""The deployment files agree with the code: docker-compose.yml, deploy/docker/Dockerfile, Prometheus, the Grafana
dashboard and the Kubernetes manifests name every service with its console script, its port (the settings default)
and its probes, read the sample config the way the services parse it, and chart only metrics the services export."""

from __future__ import annotations

import copy
import importlib
import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.registry import Collector

from services.acl_sync.metrics import AclSyncMetrics
from services.acl_sync.settings import AclSyncSettings
from services.audit.settings import AuditSettings
from services.checkpoint.metrics import CheckpointMetrics
from services.checkpoint.settings import CheckpointSettings
from services.data_mirror.metrics import MirrorMetrics
from services.data_mirror.settings import DataMirrorSettings
from services.heartbeat.metrics import HeartbeatMetrics
from services.heartbeat.settings import HeartbeatSettings
from services.offset_translator.index import TranslatorIndex
from services.offset_translator.metrics import IndexCollector, TranslatorMetrics
from services.offset_translator.settings import TranslatorSettings
from services.topic_sync.metrics import TopicSyncMetrics
from services.topic_sync.settings import TopicSyncSettings
from shared.config import load_mm2_config
from shared.config.service_settings import ServiceSettings
from tests.support.pod_security import judge_pods

# pyyaml has no stubs in this environment; imported by name so mypy sees a plain module.
yaml: Any = importlib.import_module("yaml")

REPO = Path(__file__).resolve().parents[2]
SAMPLE_CONFIG = "deploy/config/local-two-cluster.properties"
DOCKERFILE = "deploy/docker/Dockerfile"


@dataclass(frozen=True)
class ServiceDef:
    """What the code says about one service: its package, its settings and which setting is its HTTP port."""

    name: str
    package: str
    settings: type[ServiceSettings]
    port_field: str = "metrics_port"
    port_flag: str = "--metrics-port"

    @property
    def port(self) -> int:
        """The port the service listens on when nothing overrides it."""
        default = self.settings.model_fields[self.port_field].default
        assert isinstance(default, int)
        return default

    @property
    def console_script(self) -> str:
        """The pyproject console script that runs the package's __main__."""
        scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
        names = [name for name, target in scripts.items() if target == f"services.{self.package}.__main__:main"]
        assert len(names) == 1, f"one console script for services.{self.package}, found {names}"
        return str(names[0])


SERVICES = (
    ServiceDef("data-mirror", "data_mirror", DataMirrorSettings),
    ServiceDef("topic-sync", "topic_sync", TopicSyncSettings),
    ServiceDef("acl-sync", "acl_sync", AclSyncSettings),
    ServiceDef("checkpoint", "checkpoint", CheckpointSettings),
    ServiceDef("heartbeat", "heartbeat", HeartbeatSettings),
    ServiceDef("audit", "audit", AuditSettings),
    ServiceDef("offset-translator", "offset_translator", TranslatorSettings, "port", "--port"),
)
BY_NAME = {service.name: service for service in SERVICES}


def load_yaml(path: str) -> Any:
    """One YAML document of the repository."""
    return yaml.safe_load((REPO / path).read_text())


def flag_value(args: list[str], flag: str) -> str | None:
    """The value after `flag` in an argument list."""
    return args[args.index(flag) + 1] if flag in args else None


# -- Dockerfile ------------------------------------------------------------------------------------------
@dataclass
class Stage:
    """One build stage: its name, what it is built FROM and its instructions in order."""

    name: str
    base: str
    instructions: list[tuple[str, str]] = field(default_factory=list)


def dockerfile_stages() -> dict[str, Stage]:
    """The Dockerfile's stages by name (continuation lines joined, comments dropped)."""
    stages: dict[str, Stage] = {}
    current: Stage | None = None
    for raw in re.sub(r"\\\n", " ", (REPO / DOCKERFILE).read_text()).splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        op, _, rest = line.partition(" ")
        if op.upper() == "FROM":
            match = re.fullmatch(r"(\S+)\s+AS\s+(\S+)", rest.strip(), re.IGNORECASE)
            assert match, f"every stage is named: {line}"
            current = stages[match[2]] = Stage(match[2], match[1])
        elif current is not None:
            current.instructions.append((op.upper(), rest.strip()))
    return stages


def lineage(stages: dict[str, Stage], name: str) -> list[Stage]:
    """The stage and the stages it is built from, nearest first."""
    chain = [stages[name]]
    while chain[-1].base in stages:
        chain.append(stages[chain[-1].base])
    return chain


def effective(stages: dict[str, Stage], name: str, op: str) -> list[str]:
    """Every `op` instruction the image of stage `name` inherits, oldest first."""
    return [rest for stage in reversed(lineage(stages, name)) for (kind, rest) in stage.instructions if kind == op]


@pytest.mark.parametrize("service", SERVICES, ids=lambda s: s.name)
def test_each_service_has_a_dockerfile_target_running_its_console_script(service: ServiceDef) -> None:
    stages = dockerfile_stages()
    assert service.name in stages
    assert json.loads(effective(stages, service.name, "ENTRYPOINT")[-1]) == [service.console_script]
    assert str(service.port) in effective(stages, service.name, "EXPOSE")[-1].split()
    assert effective(stages, service.name, "USER")[-1] == "strait", "services run as the unprivileged user"


@pytest.mark.parametrize("service", SERVICES, ids=lambda s: s.name)
def test_each_image_installs_only_its_own_extra(service: ServiceDef) -> None:
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    stages = dockerfile_stages()
    installs = [run for run in effective(stages, service.name, "RUN") if "pip install" in run and "/wheels/" in run]
    assert [re.findall(r"\[([a-z-]+)\]", run) for run in installs] == [[service.name]]
    assert service.name in extras
    runs = " ".join(effective(stages, service.name, "RUN"))
    if service.name == "data-mirror":
        assert "openjdk" in runs, "Spark needs a Java runtime in the data-mirror image"
    else:
        assert "openjdk" not in runs
        assert not any("pyspark" in requirement for requirement in extras[service.name])


def test_the_image_reads_its_config_where_compose_and_kubernetes_mount_it() -> None:
    env = " ".join(effective(dockerfile_stages(), "runtime", "ENV"))
    config = re.search(r"STRAIT_CONFIG=(\S+)", env)
    assert config
    assert config[1] == "/etc/strait/config/strait.properties"
    assert "STRAIT_METRICS_HOST=0.0.0.0" in env


# -- docker-compose.yml ----------------------------------------------------------------------------------
def compose_services() -> dict[str, Any]:
    """The services of docker-compose.yml (YAML anchors and merge keys resolved)."""
    services: dict[str, Any] = load_yaml("docker-compose.yml")["services"]
    return services


@pytest.mark.parametrize("service", SERVICES, ids=lambda s: s.name)
def test_compose_runs_each_service_from_its_target_with_its_port_and_health_check(service: ServiceDef) -> None:
    entry = compose_services()[service.name]
    assert entry["build"]["dockerfile"] == DOCKERFILE
    assert entry["build"]["target"] == service.name
    assert (REPO / entry["build"]["context"] / DOCKERFILE).exists()
    assert flag_value(entry["command"], service.port_flag) == str(service.port)
    probe = " ".join(entry["healthcheck"]["test"])
    assert f"http://127.0.0.1:{service.port}/ready" in probe
    for kafka in ("kafka-a", "kafka-b"):
        assert entry["depends_on"][kafka]["condition"] == "service_healthy"
    assert f"./{SAMPLE_CONFIG}:{entry['environment']['STRAIT_CONFIG']}:ro" in entry["volumes"]


def test_compose_starts_in_an_order_that_exists() -> None:
    services = compose_services()
    for name, entry in services.items():
        for dependency, condition in (entry.get("depends_on") or {}).items():
            assert dependency in services, f"{name} depends on unknown {dependency}"
            if condition["condition"] == "service_healthy":
                assert "healthcheck" in services[dependency], f"{dependency} has no health check"
    assert services["data-mirror"]["depends_on"]["topic-sync"]["condition"] == "service_healthy"


def test_compose_runs_two_single_node_kraft_clusters_from_the_apache_image() -> None:
    services = compose_services()
    for name in ("kafka-a", "kafka-b"):
        entry = services[name]
        assert re.fullmatch(r"apache/kafka:4\.\d+\.\d+", entry["image"])
        assert entry["environment"]["KAFKA_PROCESS_ROLES"] == "broker,controller"
        assert entry["environment"]["KAFKA_CONTROLLER_QUORUM_VOTERS"] == f"1@{name}:29093"
        assert "healthcheck" in entry


def test_compose_points_the_sample_config_at_its_clusters() -> None:
    services = compose_services()
    overrides = {service.name: services[service.name]["environment"]["STRAIT_CONFIG_OVERRIDES"] for service in SERVICES}
    assert len(set(overrides.values())) == 1
    config = load_mm2_config(REPO / SAMPLE_CONFIG, env={"STRAIT_CONFIG_OVERRIDES": next(iter(overrides.values()))})
    for alias, name in (("A", "kafka-a"), ("B", "kafka-b")):
        advertised = services[name]["environment"]["KAFKA_ADVERTISED_LISTENERS"]
        assert f"PLAINTEXT://{config.clusters[alias].bootstrap_servers}" in advertised.split(",")
    assert [flow.name for flow in config.enabled_flows] == ["A->B"]


def test_the_sample_config_matches_the_compose_clusters_seen_from_the_host() -> None:
    services = compose_services()
    config = load_mm2_config(REPO / SAMPLE_CONFIG, env={})
    for alias, name in (("A", "kafka-a"), ("B", "kafka-b")):
        host_port = config.clusters[alias].bootstrap_servers.rsplit(":", 1)[1]
        assert f"127.0.0.1:{host_port}:{host_port}" in services[name]["ports"], "on the host's loopback only"


def test_prometheus_scrapes_every_service_on_its_port() -> None:
    jobs = {job["job_name"]: job for job in load_yaml("deploy/prometheus/prometheus.yml")["scrape_configs"]}
    assert set(jobs) == set(BY_NAME)
    for service in SERVICES:
        assert jobs[service.name]["static_configs"][0]["targets"] == [f"{service.name}:{service.port}"]
    compose = compose_services()
    assert "./deploy/prometheus/prometheus.yml:/etc/prometheus/prometheus.yml:ro" in compose["prometheus"]["volumes"]


def test_grafana_is_provisioned_from_files_that_exist() -> None:
    for volume in compose_services()["grafana"]["volumes"]:
        assert (REPO / volume.split(":")[0]).exists(), volume
    datasource = load_yaml("deploy/grafana/provisioning/datasources/prometheus.yml")["datasources"][0]
    assert datasource["type"] == "prometheus"
    dashboard = json.loads((REPO / "deploy/grafana/dashboards/strait.json").read_text())
    # Every panel asks the dashboard's data-source variable (any Prometheus a user picks), never a fixed uid.
    (variable,) = [v for v in dashboard["templating"]["list"] if v["type"] == "datasource"]
    assert variable["query"] == "prometheus"
    uids = {panel["datasource"]["uid"] for panel in dashboard["panels"] if "datasource" in panel}
    uids |= {t["datasource"]["uid"] for panel in dashboard["panels"] for t in panel.get("targets", [])}
    uids |= {v["datasource"]["uid"] for v in dashboard["templating"]["list"] if "datasource" in v}
    assert uids == {"${" + variable["name"] + "}"}


def test_services_up_is_green_when_up_and_red_when_down() -> None:
    dashboard = json.loads((REPO / "deploy/grafana/dashboards/strait.json").read_text())
    (panel,) = [p for p in dashboard["panels"] if p["title"] == "Services up"]
    steps = panel["fieldConfig"]["defaults"]["thresholds"]["steps"]
    assert steps == [{"color": "red", "value": None}, {"color": "green", "value": 1}]
    jobs = {job["job_name"] for job in load_yaml("deploy/prometheus/prometheus.yml")["scrape_configs"]}
    charted = re.fullmatch(r'up\{job=~"([^"]+)"\}', panel["targets"][0]["expr"])
    assert charted is not None
    assert set(charted.group(1).split("|")) == jobs, "every scraped service, and only those"


# -- metrics ---------------------------------------------------------------------------------------------
def exported_metric_names() -> set[str]:
    """Every sample name the services' metrics produce (counters as *_total, histograms as *_bucket, ...)."""
    registry = CollectorRegistry()
    for metrics in (MirrorMetrics, TopicSyncMetrics, AclSyncMetrics, CheckpointMetrics, HeartbeatMetrics):
        metrics(registry)
    TranslatorMetrics(registry)
    collector: Collector = IndexCollector(TranslatorIndex([], {}))
    registry.register(collector)
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}
    return {family.name + suffix for family in registry.collect() for suffix in suffixes.get(family.type, ("",))}


def dashboard_expressions() -> dict[str, list[str]]:
    """Panel title -> its PromQL expressions."""
    dashboard = json.loads((REPO / "deploy/grafana/dashboards/strait.json").read_text())
    return {panel["title"]: [t["expr"] for t in panel.get("targets", [])] for panel in dashboard["panels"]}


def test_the_dashboard_charts_only_metrics_the_services_export() -> None:
    exported = exported_metric_names()
    used = {name for exprs in dashboard_expressions().values() for e in exprs for name in re.findall(r"strait_\w+", e)}
    assert used, "the dashboard charts Strait metrics"
    assert used - exported == set()


def test_the_dashboard_shows_what_operators_watch() -> None:
    charted = {title.lower(): " ".join(exprs) for title, exprs in dashboard_expressions().items()}
    wanted = {
        "throughput": "strait_mirror_record_count_total",
        "replication latency": "strait_mirror_replication_latency_ms",
        "record age": "strait_mirror_record_age_ms",
        "records behind": "strait_mirror_records_behind",
        "checkpoint latency": "strait_checkpoint_latency_ms_bucket",
        "heartbeat age": "strait_heartbeat_age_ms",
        "errors": "strait_mirror_errors_total",
    }
    for topic, metric in wanted.items():
        assert any(topic in title and metric in exprs for title, exprs in charted.items()), topic


# -- Kubernetes ------------------------------------------------------------------------------------------
def kubernetes_objects() -> list[dict[str, Any]]:
    """Every object the kustomization lists (its resources), in order."""
    kustomization = load_yaml("deploy/kubernetes/kustomization.yaml")
    objects: list[dict[str, Any]] = []
    for resource in kustomization["resources"]:
        text = (REPO / "deploy/kubernetes" / resource).read_text()
        objects += [doc for doc in yaml.safe_load_all(text) if doc]
    return objects


def k8s_objects_of_kind(kind: str) -> list[dict[str, Any]]:
    """Every object of `kind` the kustomization lists."""
    return [o for o in kubernetes_objects() if o["kind"] == kind]


def k8s_object(kind: str, name: str) -> dict[str, Any]:
    """The one object of `kind` called `name`."""
    found = [o for o in kubernetes_objects() if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(found) == 1, f"one {kind} {name}, found {len(found)}"
    return found[0]


@pytest.mark.parametrize("service", SERVICES, ids=lambda s: s.name)
def test_each_service_has_a_deployment_with_probes_on_its_port(service: ServiceDef) -> None:
    pod = k8s_object("Deployment", f"strait-{service.name}")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"] == f"strait/{service.name}"
    assert container["command"] == [service.console_script]
    assert flag_value(container["args"], service.port_flag) == str(service.port)
    assert flag_value(container["args"], "--config") == "/etc/strait/config/strait.properties"
    ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    for probe, path in (("livenessProbe", "/health"), ("readinessProbe", "/ready")):
        assert container[probe]["httpGet"]["path"] == path
        assert ports[container[probe]["httpGet"]["port"]] == service.port
    for kind in ("requests", "limits"):
        assert {"cpu", "memory"} <= set(container["resources"][kind])
    mounts = {mount["name"]: mount["mountPath"] for mount in container["volumeMounts"]}
    volumes = {volume["name"]: volume for volume in pod["volumes"]}
    assert volumes["config"]["configMap"]["name"] == "strait-config"
    assert mounts["config"] == "/etc/strait/config"
    assert volumes["secrets"]["secret"]["secretName"] == "strait-credentials"
    assert mounts["secrets"] == "/etc/strait/secrets"


@pytest.mark.parametrize("service", SERVICES, ids=lambda s: s.name)
def test_each_service_is_reachable_through_a_service_on_its_port(service: ServiceDef) -> None:
    name = "strait-offset-translator" if service.name == "offset-translator" else f"strait-{service.name}-metrics"
    spec = k8s_object("Service", name)["spec"]
    assert spec["selector"] == {"app.kubernetes.io/name": f"strait-{service.name}"}
    assert [port["port"] for port in spec["ports"]] == [service.port]


def test_the_configmap_config_parses_with_the_credentials_the_security_doc_has_the_operator_write(
    tmp_path: Path,
) -> None:
    """No Secret ships (test_deploy_security.py): the operator creates it with the keys docs/security.md lists, and
    those are the keys the config reads."""
    properties = (REPO / "deploy/kubernetes/strait.properties").read_text()
    keys = re.findall(r"\$\{file:/etc/strait/secrets/credentials\.properties:([\w.-]+)\}", properties)
    assert sorted(keys) == ["a.password", "a.username", "b.password", "b.username"]
    guide = (REPO / "docs/security.md").read_text()
    assert all(f"{key}=" in guide for key in keys), "docs/security.md names every key the config reads"
    assert not k8s_objects_of_kind("Secret"), "no Secret value ships in the repository"
    (tmp_path / "credentials.properties").write_text("".join(f"{key}=value-of-{key}\n" for key in keys))
    config_file = tmp_path / "strait.properties"
    config_file.write_text(properties.replace("/etc/strait/secrets/", f"{tmp_path}/"))
    config = load_mm2_config(config_file, env={})
    jaas = config.clusters["A"].producer_props()["sasl.jaas.config"]
    assert 'username="value-of-a.username"' in jaas
    assert 'password="value-of-a.password"' in jaas
    sample = load_mm2_config(REPO / SAMPLE_CONFIG, env={})
    assert [f.name for f in config.enabled_flows] == [f.name for f in sample.enabled_flows]
    assert config.enabled_flows[0].settings.topics == sample.enabled_flows[0].settings.topics


def test_the_kustomization_lists_every_manifest() -> None:
    listed = set(load_yaml("deploy/kubernetes/kustomization.yaml")["resources"])
    present = {path.name for path in (REPO / "deploy/kubernetes").glob("*.yaml")} - {"kustomization.yaml"}
    assert listed == present


@pytest.mark.parametrize("service", SERVICES, ids=lambda s: s.name)
def test_each_pod_meets_pod_security_restricted(service: ServiceDef) -> None:
    """What a namespace enforcing Pod Security "restricted" checks of a pod and each of its containers."""
    assert_restricted(k8s_object("Deployment", f"strait-{service.name}")["spec"]["template"]["spec"])


def test_the_spark_executor_pods_meet_pod_security_restricted_through_their_template() -> None:
    """Spark on Kubernetes creates the executor pods itself: from the template the component mounts and names."""
    component = REPO / "deploy/kubernetes/spark-on-kubernetes"
    template = load_yaml("deploy/kubernetes/spark-on-kubernetes/executor-pod-template.yaml")
    assert_restricted(template["spec"])
    (generator,) = load_yaml("deploy/kubernetes/spark-on-kubernetes/kustomization.yaml")["configMapGenerator"]
    assert generator["files"] == ["executor-pod-template.yaml"]
    patch = yaml.safe_load((component / "data-mirror-patch.yaml").read_text())["spec"]["template"]["spec"]
    (container,) = patch["containers"]
    (mount,) = container["volumeMounts"]
    (volume,) = patch["volumes"]
    assert (volume["name"], volume["configMap"]["name"]) == (mount["name"], generator["name"])
    overrides = dict(
        item.strip().split("=", 1)
        for env in container["env"]
        if env["name"] == "STRAIT_CONFIG_OVERRIDES"
        for item in env["value"].split(";")
        if item.strip()
    )
    assert overrides["spark.kubernetes.executor.podTemplateFile"] == f"{mount['mountPath']}/executor-pod-template.yaml"
    (executor,) = template["spec"]["containers"]
    assert overrides["spark.kubernetes.executor.podTemplateContainerName"] == executor["name"]


def assert_restricted(pod: dict[str, Any]) -> None:
    """Judged by Kubernetes' own Pod Security code at "restricted", as a namespace enforcing it would."""
    verdict = judge_pods({"pod": pod})["pod"]
    assert verdict.allowed, verdict.forbidden


def test_the_pod_security_judge_refuses_what_restricted_forbids() -> None:
    """The judge is not a formality: the data-mirror pod with root, a capability kept or privilege escalation allowed
    is refused, naming the rule, and the pod as shipped is allowed."""
    shipped = k8s_object("Deployment", "strait-data-mirror")["spec"]["template"]["spec"]

    def changed(change: Any) -> dict[str, Any]:
        pod: dict[str, Any] = copy.deepcopy(shipped)
        change(pod, pod["containers"][0]["securityContext"])
        return pod

    verdicts = judge_pods(
        {
            "shipped": shipped,
            "root": changed(lambda pod, _c: pod["securityContext"].update(runAsNonRoot=False, runAsUser=0)),
            "capability kept": changed(lambda _p, c: c["capabilities"].update(drop=["NET_RAW"])),
            "escalation": changed(lambda _p, c: c.update(allowPrivilegeEscalation=True)),
            "no seccomp": changed(lambda pod, _c: pod["securityContext"].pop("seccompProfile")),
        }
    )
    assert verdicts["shipped"].allowed, verdicts["shipped"].forbidden
    expected = {
        "root": "runAsNonRoot != true",
        "capability kept": "unrestricted capabilities",
        "escalation": "allowPrivilegeEscalation != false",
        "no seccomp": "seccompProfile",
    }
    for name, rule in expected.items():
        assert not verdicts[name].allowed, name
        assert any(rule in reason for reason in verdicts[name].forbidden), (name, verdicts[name].forbidden)


def test_every_service_with_standby_replicas_has_a_disruption_budget() -> None:
    """A drain evicts one replica at a time from services that run two (leases, or answering requests)."""
    budgets = {o["metadata"]["name"]: o["spec"] for o in kubernetes_objects() if o["kind"] == "PodDisruptionBudget"}
    for deployment in (o for o in kubernetes_objects() if o["kind"] == "Deployment"):
        name, spec = deployment["metadata"]["name"], deployment["spec"]
        if spec["replicas"] > 1:
            assert budgets[name]["minAvailable"] == 1, name
            assert budgets[name]["selector"]["matchLabels"] == spec["selector"]["matchLabels"], name


def test_the_config_map_is_generated_with_a_content_hash_so_a_change_rolls_the_pods() -> None:
    kustomization = load_yaml("deploy/kubernetes/kustomization.yaml")
    (generator,) = kustomization["configMapGenerator"]
    assert generator == {"name": "strait-config", "files": ["strait.properties"]}
    assert not kustomization.get("generatorOptions", {}).get("disableNameSuffixHash")
    assert not [o for o in kubernetes_objects() if o["kind"] == "ConfigMap"], "one source for the config"


def test_the_flow_alerts_name_only_metrics_the_services_export() -> None:
    """A renamed metric would silence its alert without a word."""
    rules = load_yaml("deploy/prometheus/alerts.yml")
    (flows,) = [group for group in rules["groups"] if group["name"] == "strait-flows"]
    named = {name for rule in flows["rules"] for name in re.findall(r"\bstrait_\w+", rule["expr"])}
    assert "strait_flow_stalled" in named
    assert named - exported_metric_names() == set()


def test_the_operator_rules_are_the_compose_rules_and_the_pod_monitor_names_jobs_as_compose_does() -> None:
    rules = load_yaml("deploy/kubernetes/monitoring/prometheus-rule.yaml")
    assert rules["kind"] == "PrometheusRule"
    assert rules["spec"]["groups"] == load_yaml("deploy/prometheus/alerts.yml")["groups"]
    monitor = load_yaml("deploy/kubernetes/monitoring/pod-monitor.yaml")
    assert monitor["spec"]["jobLabel"] == "app.kubernetes.io/component"
    scraped = {job["job_name"] for job in load_yaml("deploy/prometheus/prometheus.yml")["scrape_configs"]}
    components = {
        o["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/component"]
        for o in kubernetes_objects()
        if o["kind"] == "Deployment"
    }
    assert components == scraped, "a job name in the rules would match in one place and not the other"
    ports = {endpoint["port"] for endpoint in monitor["spec"]["podMetricsEndpoints"]}
    (translator,) = [e for e in monitor["spec"]["podMetricsEndpoints"] if e["port"] == "http"]
    assert translator["scheme"] == "https", "the translator serves HTTPS only on Kubernetes"
    for deployment in (o for o in kubernetes_objects() if o["kind"] == "Deployment"):
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        assert {port["name"] for port in container["ports"]} & ports, deployment["metadata"]["name"]


def test_the_pod_monitor_and_the_network_policy_select_every_strait_pod() -> None:
    """They select by app.kubernetes.io/part-of, which kustomize puts on the pod templates only when told to."""
    (label,) = load_yaml("deploy/kubernetes/kustomization.yaml")["labels"]
    assert label["pairs"] == {"app.kubernetes.io/part-of": "strait"}
    assert label["includeTemplates"] is True
    monitor = load_yaml("deploy/kubernetes/monitoring/pod-monitor.yaml")
    assert monitor["spec"]["selector"]["matchLabels"] == label["pairs"]
    policy = k8s_object("NetworkPolicy", "strait-ingress")["spec"]
    assert policy["podSelector"]["matchLabels"] == label["pairs"]
    allowed = {port["port"] for rule in policy["ingress"] for port in rule["ports"]}
    for deployment in (o for o in kubernetes_objects() if o["kind"] == "Deployment"):
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        named = {port["name"] for port in container["ports"]}
        assert named & allowed, f"{deployment['metadata']['name']}: its probes and metrics port would be cut off"
