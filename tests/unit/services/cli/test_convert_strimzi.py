"""`strait convert-strimzi`: a Strimzi KafkaMirrorMaker2 resource becomes a properties file every Strait service
reads, with its secrets read from the mounted Secrets, and whatever has no equivalent is named, not dropped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from services.cli.strimzi import convert
from shared.config import load_mm2_config, parse_properties
from shared.kafka.client_props import jaas_credentials
from tests.unit.services.cli.conftest import run_cli

RESOURCE = """
apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaMirrorMaker2
metadata:
  name: dr-mirror
spec:
  version: 3.9.0
  replicas: 1
  connectCluster: "dr"
  clusters:
    - alias: "prod"
      bootstrapServers: prod-kafka-bootstrap:9093
      tls:
        trustedCertificates:
          - secretName: prod-cluster-ca-cert
            certificate: ca.crt
      authentication:
        type: scram-sha-512
        username: mirror
        passwordSecret:
          secretName: mirror-user
          password: password
    - alias: "dr"
      bootstrapServers: dr-kafka-bootstrap:9092
      config:
        config.storage.replication.factor: 3
  mirrors:
    - sourceCluster: "prod"
      targetCluster: "dr"
      topicsPattern: "orders.*|payments"
      topicsExcludePattern: ".*-internal"
      groupsPattern: ".*"
      sourceConnector:
        tasksMax: 4
        config:
          replication.factor: 3
          sync.topic.acls.enabled: "false"
      checkpointConnector:
        config:
          emit.checkpoints.interval.seconds: 10
          sync.group.offsets.enabled: "true"
"""


def _secrets(tmp_path: Path) -> Path:
    secrets = tmp_path / "secrets"
    (secrets / "prod-cluster-ca-cert").mkdir(parents=True)
    certificate = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    (secrets / "prod-cluster-ca-cert" / "ca.crt").write_text(certificate)
    (secrets / "mirror-user").mkdir()
    (secrets / "mirror-user" / "password").write_text("s3cret-pw")
    return secrets


def test_a_mirror_maker_2_resource_becomes_a_config_strait_reads(tmp_path: Path) -> None:
    resource = tmp_path / "mm2.yaml"
    resource.write_text(RESOURCE)
    secrets = _secrets(tmp_path)
    out = tmp_path / "strait.properties"
    result = run_cli("convert-strimzi", str(resource), "--out", str(out), "--secrets-dir", str(secrets))
    assert result.returncode == 0, result.stderr
    assert "not converted: mirror prod->dr sourceConnector.tasksMax" in result.stderr
    assert "s3cr" not in out.read_text(), "secrets stay in the Secrets"
    validated = run_cli("validate-config", str(out))
    assert validated.returncode == 0, validated.stderr
    assert "prod->dr" in validated.stdout

    config = load_mm2_config(out, env={})
    (flow,) = config.enabled_flows
    assert (flow.source, flow.target) == ("prod", "dr")
    assert flow.settings.topics == ("orders.*|payments",)
    assert flow.settings.topics_exclude == (".*-internal",)
    assert flow.settings.emit_checkpoints_interval_s == 10
    assert flow.settings.sync_group_offsets_enabled is True
    assert flow.emits_heartbeats is False, "Strimzi ran no heartbeat connector for this mirror"
    prod = config.clusters["prod"].producer_props()
    assert prod["security.protocol"] == "SASL_SSL"
    assert prod["sasl.mechanism"] == "SCRAM-SHA-512"
    assert 'username="mirror"' in prod["sasl.jaas.config"]
    assert "BEGIN CERTIFICATE" in prod["ssl.truststore.certificates"]
    assert "security.protocol" not in config.clusters["dr"].producer_props()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("kind: Kafka\nspec: {}\n", "no KafkaMirrorMaker2 resource"),
        (RESOURCE.replace('targetCluster: "dr"', 'targetCluster: "qa"'), "cluster 'qa' is not in spec.clusters"),
        (RESOURCE.replace("type: scram-sha-512", "type: oauth"), None),
        ("kind: [unclosed\n", "is not YAML"),
    ],
)
def test_what_cannot_be_converted_is_named(tmp_path: Path, text: str, message: str | None) -> None:
    resource = tmp_path / "mm2.yaml"
    resource.write_text(text)
    result = run_cli("convert-strimzi", str(resource))
    if message is None:  # converted, with the unsupported part named on stderr and in the file
        assert result.returncode == 0, result.stderr
        assert "authentication type 'oauth'" in result.stderr
        assert "# NOT CONVERTED: cluster prod: authentication type 'oauth'" in result.stdout
        return
    assert result.returncode == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def _resource(**changes: Any) -> dict[str, Any]:
    """RESOURCE as data, with `changes` applied (a dotted path of keys and list indexes -> its new value)."""
    resource: dict[str, Any] = yaml.safe_load(RESOURCE)
    for path, value in changes.items():
        *parents, last = path.split("__")
        holder: Any = resource
        for part in parents:
            holder = holder[int(part)] if part.isdigit() else holder[part]
        holder[int(last) if last.isdigit() else last] = value
    return resource


# Each would add a line (a key of its own) to the file if written as it is: `\r` and `\n` end a line.
DOWNGRADE = "\rprod.security.protocol=PLAINTEXT"
HOSTILE_VALUES = [
    "dr-kafka-bootstrap:9092" + DOWNGRADE,
    "x\nprod.security.protocol = PLAINTEXT",
    "x\r\nprod.sasl.mechanism=PLAIN",
    " leading and trailing spaces ",
    "=:#! \t\f\\",
    "\\",
    "#not a comment",
    "line\u2028separator\u2029and \u0085 NEL",
    "unicode: é ü 中文 😀 \x00\x1b[31m",
]


def test_hostile_values_and_keys_are_written_as_one_value_each(tmp_path: Path) -> None:
    resource = _resource(
        spec__clusters__1__bootstrapServers=HOSTILE_VALUES[0],
        spec__clusters__1__config={f"hostile.{n}": value for n, value in enumerate(HOSTILE_VALUES)},
        spec__mirrors__0__topicsPattern="orders" + DOWNGRADE,
        spec__mirrors__0__sourceConnector={
            "config": {"a\nprod.security.protocol": "PLAINTEXT", "b = c": "d", " #e:f!": "g"},
            "tasksMax" + DOWNGRADE: 4,
        },
    )
    path = tmp_path / "mm2.yaml"
    path.write_text(yaml.safe_dump(resource))
    out = tmp_path / "strait.properties"
    result = run_cli("convert-strimzi", str(path), "--out", str(out))
    assert result.returncode == 0, result.stderr
    written = out.read_text(encoding="utf-8")
    assert written.isascii(), "non-ASCII is written as \\uXXXX, as java.util.Properties.store does"

    props = parse_properties(written)
    assert props["prod.security.protocol"] == "SASL_SSL", "no downgrade"
    assert props["prod.sasl.mechanism"] == "SCRAM-SHA-512"
    assert props["dr.bootstrap.servers"] == HOSTILE_VALUES[0]
    for n, value in enumerate(HOSTILE_VALUES):
        assert props[f"dr.hostile.{n}"] == value
    assert props["prod->dr.topics"] == "orders" + DOWNGRADE
    assert props["prod->dr.a\nprod.security.protocol"] == "PLAINTEXT"
    assert props["prod->dr.b = c"] == "d"
    assert props["prod->dr. #e:f!"] == "g"
    expected_keys = {
        "config.providers",
        "config.providers.secrets.class",
        "clusters",
        *(f"prod.{key}" for key in ("bootstrap.servers", "security.protocol", "sasl.mechanism", "sasl.jaas.config")),
        "prod.ssl.truststore.type",
        "prod.ssl.truststore.certificates",
        "dr.bootstrap.servers",
        *(f"dr.hostile.{n}" for n in range(len(HOSTILE_VALUES))),
        "prod->dr.enabled",
        *(f"prod->dr.{key}" for key in ("topics", "topics.exclude", "groups", "emit.heartbeats.enabled")),
        *(f"prod->dr.{key}" for key in ("a\nprod.security.protocol", "b = c", " #e:f!")),
        *(f"prod->dr.{key}" for key in ("emit.checkpoints.interval.seconds", "sync.group.offsets.enabled")),
    }
    assert set(props) == expected_keys, "no key added, none lost"
    # What is named as not converted stays on its line of the header and of stderr too.
    assert "\r" not in result.stderr
    assert "# NOT CONVERTED: mirror prod->dr sourceConnector.tasksMax\\u000Dprod.security.protocol" in written


@pytest.mark.parametrize(
    ("change", "field", "value"),
    [
        (
            {"spec__clusters__0__authentication__passwordSecret__secretName": "../../.."},
            "cluster prod authentication.passwordSecret.secretName",
            "../../..",
        ),
        (
            {"spec__clusters__0__tls__trustedCertificates__0__secretName": "a/../../etc"},
            "cluster prod tls.trustedCertificates[].secretName",
            "a/../../etc",
        ),
        ({"spec__clusters__0__authentication__passwordSecret__secretName": "Mirror-User"}, "secretName", "Mirror-User"),
        ({"spec__clusters__0__authentication__passwordSecret__secretName": "-user"}, "secretName", "-user"),
        ({"spec__clusters__0__authentication__passwordSecret__secretName": "a..b"}, "secretName", "a..b"),
        ({"spec__clusters__0__authentication__passwordSecret__secretName": "a" * 254}, "secretName", "a" * 254),
        ({"spec__clusters__0__authentication__passwordSecret__secretName": "a:b}"}, "secretName", "a:b}"),
        (
            {"spec__clusters__0__authentication__passwordSecret__password": ".."},
            "cluster prod authentication.passwordSecret.password",
            "..",
        ),
        (
            {"spec__clusters__0__tls__trustedCertificates__0__certificate": "../ca.crt"},
            "cluster prod tls.trustedCertificates[].certificate",
            "../ca.crt",
        ),
        ({"spec__clusters__0__tls__trustedCertificates__0__certificate": "."}, "certificate", "."),
        ({"spec__clusters__0__tls__trustedCertificates__0__certificate": "ca crt"}, "certificate", "ca crt"),
        ({"spec__replicas": "1\nprod.security.protocol=PLAINTEXT"}, "spec.replicas", "1\nprod.security.protocol"),
        ({"spec__replicas": True}, "spec.replicas", "True"),
        ({"spec__replicas": -1}, "spec.replicas", "-1"),
        ({"spec__clusters__1__alias": "dr,evil"}, "spec.clusters[].alias", "dr,evil"),
        ({"spec__clusters__1__config": {"nested": {"a": 1}}}, "dr.nested", "mapping"),
    ],
)
def test_names_that_leave_the_mount_and_malformed_fields_are_refused(
    tmp_path: Path, change: dict[str, Any], field: str, value: str
) -> None:
    path = tmp_path / "mm2.yaml"
    path.write_text(yaml.safe_dump(_resource(**change)))
    result = run_cli("convert-strimzi", str(path))
    assert result.returncode == 2, result.stderr
    assert result.stdout == "", "nothing is written"
    (line,) = result.stderr.strip().splitlines()
    assert field in line
    assert repr(value)[1:-1][:60] in line, "the error shows what is wrong"


def test_kubernetes_names_within_the_rules_are_accepted(tmp_path: Path) -> None:
    resource = _resource(
        spec__clusters__0__tls__trustedCertificates__0__secretName="a" * 63 + ".b-c.0",
        spec__clusters__0__tls__trustedCertificates__0__certificate="_Ca-1.crt",
        spec__clusters__0__authentication__passwordSecret__password="..password",
    )
    conversion = convert(yaml.safe_dump(resource), "/mnt/secrets")
    props = parse_properties(conversion.text())
    assert f"${{secrets:/mnt/secrets/{'a' * 63}.b-c.0:_Ca-1.crt}}" == props["prod.ssl.truststore.certificates"]
    assert "${secrets:/mnt/secrets/mirror-user:..password}" in props["prod.sasl.jaas.config"]


def test_a_username_with_quotes_stays_the_username(tmp_path: Path) -> None:
    username = 'mirror" tokenauth="true'
    resource = _resource(spec__clusters__0__authentication__username=username)
    props = parse_properties(convert(yaml.safe_dump(resource)).text())
    assert jaas_credentials(props["prod.sasl.jaas.config"])[0] == username
